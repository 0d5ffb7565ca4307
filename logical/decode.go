package logical

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strconv"
	"unicode/utf8"

	"github.com/jackc/pglogrepl"
)

// PostgreSQL type OIDs whose text form maps onto a JSON type.
const (
	oidBool    = 16
	oidInt8    = 20
	oidInt2    = 21
	oidInt4    = 23
	oidOID     = 26
	oidJSON    = 114
	oidFloat4  = 700
	oidFloat8  = 701
	oidNumeric = 1700
	oidJSONB   = 3802
)

// relation is what the decoder keeps of a table: its name and columns. The
// relation cache is the capture loop's only state besides positions.
type relation struct {
	name    string // canonical, as iasql_tables spells it (iasql_table_name)
	columns []column
	key     []int // indexes of the primary-key columns
}

type column struct {
	name    string
	typeOID uint32
	nameJS  []byte // the name as a JSON string, with a trailing colon
}

var plainIdent = regexp.MustCompile(`^[a-z_][a-z0-9_$]*$`)

func quoteIdent(s string) string {
	if plainIdent.MatchString(s) {
		return s
	}
	return strconv.Quote(s) // identifiers with quotes inside are vanishingly rare; Quote keeps them readable
}

// tableName approximates iasql_table_name() for a table that no longer
// exists when its changes are decoded (the catalog gives the exact name).
func tableName(namespace, name string) string {
	if namespace == "public" {
		return quoteIdent(name)
	}
	return quoteIdent(namespace) + "." + quoteIdent(name)
}

func newRelation(m *pglogrepl.RelationMessage, keyNames []string) *relation {
	r := &relation{name: tableName(m.Namespace, m.RelationName)}
	idx := map[string]int{}
	for i, c := range m.Columns {
		js, _ := json.Marshal(c.Name)
		r.columns = append(r.columns, column{name: c.Name, typeOID: c.DataType, nameJS: append(js, ':')})
		idx[c.Name] = i
	}
	for _, k := range keyNames {
		if i, ok := idx[k]; ok {
			r.key = append(r.key, i)
		}
	}
	if len(r.key) != len(keyNames) || len(r.key) == 0 {
		// The table is gone or changed since: fall back to the replica
		// identity columns the relation message flags.
		r.key = r.key[:0]
		for i, c := range m.Columns {
			if c.Flags&1 != 0 {
				r.key = append(r.key, i)
			}
		}
	}
	return r
}

// rowJSON renders a tuple as a JSON object. Unchanged TOASTed values ('u')
// are taken from old, the same row before the change, when there is one.
// missing reports columns whose value could not be known.
func (r *relation) rowJSON(t, old *pglogrepl.TupleData) (js []byte, missing bool) {
	if t == nil {
		return nil, false
	}
	var b bytes.Buffer
	b.WriteByte('{')
	for i, c := range t.Columns {
		if i >= len(r.columns) {
			break
		}
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(r.columns[i].nameJS)
		if c.DataType == pglogrepl.TupleDataTypeToast && old != nil && i < len(old.Columns) {
			c = old.Columns[i]
		}
		switch c.DataType {
		case pglogrepl.TupleDataTypeText:
			appendValue(&b, r.columns[i].typeOID, c.Data)
		case pglogrepl.TupleDataTypeToast:
			missing = true
			b.WriteString("null")
		default:
			b.WriteString("null")
		}
	}
	b.WriteByte('}')
	return b.Bytes(), missing
}

// recordID is the primary key of a tuple as text: the value itself for a
// one-column key, a JSON array of the values for a composite one.
func (r *relation) recordID(t *pglogrepl.TupleData) *string {
	if t == nil || len(r.key) == 0 {
		return nil
	}
	vals := make([]*string, len(r.key))
	for j, i := range r.key {
		if i < len(t.Columns) && t.Columns[i].DataType == pglogrepl.TupleDataTypeText {
			s := string(t.Columns[i].Data)
			vals[j] = &s
		}
	}
	if len(vals) == 1 {
		return vals[0]
	}
	// The text form of a jsonb array, so that it compares equal to
	// jsonb_build_array(...)::text.
	var b bytes.Buffer
	b.WriteByte('[')
	for j, v := range vals {
		if j > 0 {
			b.WriteString(", ")
		}
		if v == nil {
			b.WriteString("null")
		} else {
			appendString(&b, []byte(*v))
		}
	}
	b.WriteByte(']')
	s := b.String()
	return &s
}

func appendValue(b *bytes.Buffer, typeOID uint32, v []byte) {
	switch typeOID {
	case oidBool:
		if len(v) == 1 && v[0] == 't' {
			b.WriteString("true")
		} else {
			b.WriteString("false")
		}
		return
	case oidInt2, oidInt4, oidInt8, oidOID:
		b.Write(v)
		return
	case oidFloat4, oidFloat8, oidNumeric:
		if isJSONNumber(v) {
			b.Write(v)
			return
		}
	case oidJSON, oidJSONB:
		if json.Valid(v) {
			b.Write(v)
			return
		}
	}
	appendString(b, v)
}

// isJSONNumber tells finite numbers (JSON numbers) from NaN and Infinity.
func isJSONNumber(v []byte) bool {
	if len(v) == 0 {
		return false
	}
	c := v[0]
	if c == '-' && len(v) > 1 {
		c = v[1]
	}
	return c >= '0' && c <= '9'
}

const hexDigits = "0123456789abcdef"

func appendString(b *bytes.Buffer, v []byte) {
	if !utf8.Valid(v) {
		v = bytes.ToValidUTF8(v, []byte("\uFFFD"))
	}
	b.WriteByte('"')
	start := 0
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		b.Write(v[start:i])
		switch c {
		case '"', '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			b.WriteString(`\u00`)
			b.WriteByte(hexDigits[c>>4])
			b.WriteByte(hexDigits[c&0xf])
		}
		start = i + 1
	}
	b.Write(v[start:])
	b.WriteByte('"')
}
