package schema

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"unicode"
)

// maxIdent is PostgreSQL's identifier length (NAMEDATALEN - 1 bytes).
const maxIdent = 63

// TableName is the table of a resource type. The rule: the type name's
// segments split at "::"; the first two (organization and service:
// AWS, Logs, DynamoDB, EC2) lowercased whole, the rest (the resource:
// LogGroup) in snake case (ColumnName's rule); joined with "_". So
// AWS::Logs::LogGroup is aws_logs_log_group, AWS::DynamoDB::Table
// aws_dynamodb_table, AWS::EC2::VPC aws_ec2_vpc. A name longer than 56
// bytes (so that its id column's sequence is <table>_id_seq, 63 bytes at
// most, as the table's DDL names it) is cut to 47 and ends with "_" and 8
// hex digits of the SHA-256 of the type name, so it stays unique and
// predictable.
func TableName(typeName string) string {
	parts := strings.Split(typeName, "::")
	out := make([]string, 0, len(parts))
	for i, p := range parts {
		if i < 2 {
			out = append(out, strings.ToLower(clean(p)))
		} else {
			out = append(out, snake(p))
		}
	}
	return fitIn(strings.Join(out, "_"), typeName, maxTable)
}

// ColumnName is the column of a property: snake case, a word starting at
// an upper-case letter that follows a lower-case letter or digit, or that
// starts a capitalized word after an acronym (SSESpecification:
// sse_specification, KmsKeyId: kms_key_id, Ipv6CidrBlock:
// ipv6_cidr_block); anything but letters and digits becomes "_". A
// property whose column would be the engine's "id" or the table's
// "region" (RegionColumn: AWS::SNS::Subscription's Region), a word SQL reserves
// (which the table's DDL cannot have as a column name), or the name of a
// system column every table has (xmin, ctid: "column name xmin conflicts
// with a system column name") has "aws_" before it: aws_id, aws_order,
// aws_xmin. Longer than 63 bytes: cut as TableName says.
func ColumnName(property string) string {
	n := snake(property)
	if n == IDColumn || n == RegionColumn || reserved[n] {
		n = "aws_" + n
	}
	return fit(n, property)
}

func clean(s string) string {
	return strings.Map(func(r rune) rune {
		if r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r)) {
			return r
		}
		return '_'
	}, s)
}

func snake(s string) string {
	rs := []rune(clean(s))
	var b strings.Builder
	for i, r := range rs {
		if unicode.IsUpper(r) && i > 0 {
			prev := rs[i-1]
			nextLower := i+1 < len(rs) && unicode.IsLower(rs[i+1])
			if unicode.IsLower(prev) || unicode.IsDigit(prev) || (unicode.IsUpper(prev) && nextLower) {
				b.WriteByte('_')
			}
		}
		b.WriteRune(unicode.ToLower(r))
	}
	out := b.String()
	for strings.Contains(out, "__") {
		out = strings.ReplaceAll(out, "__", "_")
	}
	out = strings.Trim(out, "_")
	if out == "" || unicode.IsDigit(rune(out[0])) {
		out = "p_" + out
	}
	return out
}

// maxTable is the longest table name: its sequence, <table>_id_seq, must
// fit in an identifier too.
const maxTable = maxIdent - len("_id_seq")

// fit is name when it fits in an identifier, else its cut form (fitIn).
func fit(name, source string) string { return fitIn(name, source, maxIdent) }

// fitIn is name when it is at most max bytes, else its first max-9 bytes,
// "_" and 8 hex digits of the SHA-256 of source.
func fitIn(name, source string, max int) string {
	if len(name) <= max {
		return name
	}
	sum := sha256.Sum256([]byte(source))
	return strings.TrimRight(name[:max-9], "_") + "_" + hex.EncodeToString(sum[:4])
}

// reserved are PostgreSQL's keywords that cannot name a column unquoted
// (pg_get_keywords(): catcode R, reserved, and T, reserved but usable as a
// function or type name), as of PostgreSQL 15.
var reserved = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`all analyse analyze and any array as asc asymmetric both case cast check
		collate column constraint create current_catalog current_date current_role current_time
		current_timestamp current_user default deferrable desc distinct do else end except false fetch
		for foreign from grant group having in initially intersect into lateral leading limit localtime
		localtimestamp not null offset on only or order placing primary references returning select
		session_user some symmetric table then to trailing true union unique user using variadic when
		where window with
		authorization binary collation concurrently cross current_schema freeze full ilike inner is
		isnull join left like natural notnull outer overlaps right similar tablesample verbose`) {
		reserved[w] = true
	}
	// The system columns every table has, which no column may be named
	// after (PostgreSQL 15, "5.5. System Columns":
	// https://www.postgresql.org/docs/15/ddl-system-columns.html).
	for _, w := range strings.Fields(`tableoid xmin cmin xmax cmax ctid`) {
		reserved[w] = true
	}
}

// quoteIdent quotes a SQL identifier.
func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

// quoteLiteral quotes a SQL string literal.
func quoteLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
