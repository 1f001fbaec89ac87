package resource

import (
	"strconv"
	"strings"

	"personnel/apierror"
	"personnel/record"
)

// keys are the rendered JSON keys of a resource's fields, with their
// punctuation, worked out once.
func newKeys(fs record.Fields) []string {
	keys := make([]string, len(fs.List))
	for i, f := range fs.List {
		keys[i] = `,"` + f.Key + `":`
	}
	return keys
}

// appendRecord renders a record as {"id":1,"<code>":"..",...}, its
// references expanded as ex says (nil: as ids).
func (r *Resource) appendRecord(b []byte, row record.Row, ex expansion) []byte {
	return append(r.appendFields(b, row, ex), '}')
}

// appendFields renders a record without its closing brace.
func (r *Resource) appendFields(b []byte, row record.Row, ex expansion) []byte {
	b = append(b, `{"id":`...)
	b = strconv.AppendInt(b, int64(row.ID), 10)
	for i := range r.fields.List {
		b = append(b, r.keys[i]...)
		if k := r.fields.List[i].Kind; k == record.KindRef || k == record.KindRefs {
			b = ex.appendRef(b, i, k, row.Values[i])
		} else {
			b = appendValue(b, k, row.Values[i])
		}
	}
	return b
}

// appendValue renders one value as JSON.
func appendValue(b []byte, k record.Kind, v record.Value) []byte {
	switch {
	case !v.Valid:
		return append(b, "null"...)
	case k == record.KindInteger || k == record.KindParent || k == record.KindRef:
		return strconv.AppendInt(b, v.Int, 10)
	case k == record.KindBoolean:
		return strconv.AppendBool(b, v.Int == 1)
	}
	return apierror.AppendString(b, v.Str)
}

// appendEnvelope renders the list envelope:
// {"count":N,"next":url|null,"previous":url|null,"msg":"","code":0,"data":[...]},
// the references of ex expanded, and each record with its children_count
// when counts is not nil.
func (r *Resource) appendEnvelope(b []byte, count int, next, previous string, rows []record.Row, ex expansion, counts map[int]int) []byte {
	b = append(b, `{"count":`...)
	b = strconv.AppendInt(b, int64(count), 10)
	b = append(b, `,"next":`...)
	b = appendURL(b, next)
	b = append(b, `,"previous":`...)
	b = appendURL(b, previous)
	b = append(b, `,"msg":"","code":0,"data":[`...)
	for i, row := range rows {
		if i > 0 {
			b = append(b, ',')
		}
		if counts != nil {
			b = append(appendCount(r.appendFields(b, row, ex), counts[row.ID]), '}')
		} else {
			b = r.appendRecord(b, row, ex)
		}
	}
	return append(b, "]}"...)
}

func appendURL(b []byte, u string) []byte {
	if u == "" {
		return append(b, "null"...)
	}
	return apierror.AppendString(b, u)
}

// FNV-1a's 64-bit offset basis and prime.
const (
	fnvOffset uint64 = 14695981039346656037
	fnvPrime  uint64 = 1099511628211
)

// ETag is the entity tag of a record's current state: a hash of every
// field, so it changes whenever the record does, on every replica alike.
// Code, name and parent hash as they always have, so tags handed out
// before extra fields existed stay valid.
func (r *Resource) ETag(row record.Row) string {
	// FNV-1a over the same bytes hash/fnv's New64a would be given, inline:
	// the tag is computed for every record answered, and the hash.Hash
	// interface would put the state and each string's bytes on the heap.
	h := fnvOffset
	write := func(s string) {
		for i := 0; i < len(s); i++ {
			h ^= uint64(s[i])
			h *= fnvPrime
		}
	}
	put := func(v uint64) {
		for range 8 { // little-endian, as binary.LittleEndian.PutUint64
			h ^= v & 0xff
			h *= fnvPrime
			v >>= 8
		}
	}
	put(uint64(row.ID))
	for i, v := range row.Values {
		f := &r.fields.List[i]
		switch {
		case f.Kind == record.KindParent:
			if v.Valid {
				put(1)
				put(uint64(v.Int))
			}
		case f.Kind == record.KindRefs:
			put(1)
			put(uint64(len(v.IDs)))
			for _, id := range v.IDs {
				put(uint64(id))
			}
		case f.Replaced: // code and name, never null
			put(uint64(len(v.Str)))
			write(v.Str)
		case !v.Valid:
			put(0)
		case f.Kind == record.KindInteger || f.Kind == record.KindBoolean || f.Kind == record.KindRef:
			put(1)
			put(uint64(v.Int))
		default:
			put(1)
			put(uint64(len(v.Str)))
			write(v.Str)
		}
	}
	b := make([]byte, 0, 16)
	b = append(b, '"')
	b = strconv.AppendUint(b, h, 36)
	return string(append(b, '"'))
}

// Precondition is an If-Match header: nil when absent.
type Precondition []string

// ParsePrecondition parses If-Match headers into their entity tags (nil
// when there are none). "*" matches any existing record. Weak tags (W/"..")
// are kept but never match: If-Match compares strongly (RFC 9110 13.1.1).
func ParsePrecondition(headers []string) Precondition {
	var tags Precondition
	for _, h := range headers {
		for _, t := range strings.Split(h, ",") {
			if t = strings.TrimSpace(t); t != "" {
				tags = append(tags, t)
			}
		}
	}
	if len(headers) > 0 && tags == nil {
		return Precondition{}
	}
	return tags
}

// Matches reports whether etag satisfies the precondition.
func (p Precondition) Matches(etag string) bool {
	for _, t := range p {
		if t == "*" || t == etag {
			return true
		}
	}
	return false
}
