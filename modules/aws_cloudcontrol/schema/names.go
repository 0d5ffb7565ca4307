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
// aws_dynamodb_table, AWS::EC2::VPC aws_ec2_vpc. A name longer than 63
// bytes is cut to 54 and ends with "_" and 8 hex digits of the SHA-256 of
// the type name, so it stays unique and predictable.
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
	return fit(strings.Join(out, "_"), typeName)
}

// ColumnName is the column of a property: snake case, a word starting at
// an upper-case letter that follows a lower-case letter or digit, or that
// starts a capitalized word after an acronym (SSESpecification:
// sse_specification, KmsKeyId: kms_key_id, Ipv6CidrBlock:
// ipv6_cidr_block); anything but letters and digits becomes "_". A
// property whose column would be the engine's "id" is aws_id. Longer than
// 63 bytes: cut as TableName says.
func ColumnName(property string) string {
	n := snake(property)
	if n == IDColumn {
		n = "aws_id"
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

func fit(name, source string) string {
	if len(name) <= maxIdent {
		return name
	}
	sum := sha256.Sum256([]byte(source))
	return strings.TrimRight(name[:54], "_") + "_" + hex.EncodeToString(sum[:4])
}

// quoteIdent quotes a SQL identifier.
func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

// quoteLiteral quotes a SQL string literal.
func quoteLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
