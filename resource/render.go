package resource

import (
	"encoding/binary"
	"hash/fnv"
	"strconv"
	"strings"

	"personnel/apierror"
	"personnel/ent"
)

// appendRecord renders a record as {"id":1,"<code>":"..","<name>":"..","<parent>":null}.
func (r *Resource[T]) appendRecord(b []byte, row ent.HierarchyRow) []byte {
	return append(r.appendFields(b, row), '}')
}

// appendFields renders a record without its closing brace.
func (r *Resource[T]) appendFields(b []byte, row ent.HierarchyRow) []byte {
	b = append(b, r.names.keyID...)
	b = strconv.AppendInt(b, int64(row.ID), 10)
	b = append(b, r.names.keyCode...)
	b = apierror.AppendString(b, row.Code)
	b = append(b, r.names.keyName...)
	b = apierror.AppendString(b, row.Name)
	b = append(b, r.names.keyParent...)
	if row.ParentID == nil {
		b = append(b, "null"...)
	} else {
		b = strconv.AppendInt(b, int64(*row.ParentID), 10)
	}
	return b
}

// appendEnvelope renders the list envelope:
// {"count":N,"next":url|null,"previous":url|null,"msg":"","code":0,"data":[...]}.
func (r *Resource[T]) appendEnvelope(b []byte, count int, next, previous string, rows []ent.HierarchyRow) []byte {
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
		b = r.appendRecord(b, row)
	}
	return append(b, "]}"...)
}

func appendURL(b []byte, u string) []byte {
	if u == "" {
		return append(b, "null"...)
	}
	return apierror.AppendString(b, u)
}

// ETag is the entity tag of a record's current state: a hash of every
// field, so it changes whenever the record does, on every replica alike.
func ETag(row ent.HierarchyRow) string {
	h := fnv.New64a()
	var n [8]byte
	put := func(v uint64) {
		binary.LittleEndian.PutUint64(n[:], v)
		h.Write(n[:])
	}
	put(uint64(row.ID))
	put(uint64(len(row.Code)))
	h.Write([]byte(row.Code))
	put(uint64(len(row.Name)))
	h.Write([]byte(row.Name))
	if row.ParentID != nil {
		put(1)
		put(uint64(*row.ParentID))
	}
	return `"` + strconv.FormatUint(h.Sum64(), 36) + `"`
}

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
