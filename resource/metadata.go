package resource

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"

	"github.com/gin-gonic/gin"

	"personnel/apierror"
	"personnel/record"
)

// OPTIONS answers as Django REST Framework's SimpleMetadata does, so that
// clients which build their forms from it (DRF's browsable API, BioTime's
// own front end, generic admin tools) work unchanged:
//
//	{"name": "Department List", "description": "...",
//	 "renders": ["application/json"], "parses": ["application/json"],
//	 "actions": {"POST": {"id": {"type": "integer", "required": false, "read_only": true, "label": "ID"},
//	                      "dept_code": {"type": "string", "required": true, "read_only": false,
//	                                    "label": "Dept code", "max_length": 50}, ...}}}
//
// actions describes the body of a POST (on a collection) or a PUT (on a
// record) and is there only for a caller who may make it: an editor, and
// on a record only when the record exists (DRF's get_object). Every path
// of a resource answers OPTIONS with an Allow header listing its methods
// in DRF's order. Each body is worked out once, at registration.

// fieldInfo is DRF's description of one serializer field.
type fieldInfo struct {
	Type      string       `json:"type"`
	Required  bool         `json:"required"`
	ReadOnly  bool         `json:"read_only"`
	Label     string       `json:"label"`
	HelpText  string       `json:"help_text,omitempty"`
	MaxLength int          `json:"max_length,omitempty"`
	MinValue  *int64       `json:"min_value,omitempty"`
	MaxValue  *int64       `json:"max_value,omitempty"`
	Choices   []choiceInfo `json:"choices,omitempty"`
}

// choiceInfo is one choice of a choice field.
type choiceInfo struct {
	Value       string `json:"value"`
	DisplayName string `json:"display_name"`
}

// namedField is a field's description under its JSON key.
type namedField struct {
	key  string
	info fieldInfo
}

// serializerInfo describes a body's fields in the order records render
// them, which a JSON object from a map would lose.
type serializerInfo []namedField

// MarshalJSON renders the fields as one object, in order.
func (s serializerInfo) MarshalJSON() ([]byte, error) {
	b := []byte{'{'}
	for i, f := range s {
		if i > 0 {
			b = append(b, ',')
		}
		b = apierror.AppendString(b, f.key)
		b = append(b, ':')
		info, err := json.Marshal(f.info)
		if err != nil {
			return nil, err
		}
		b = append(b, info...)
	}
	return append(b, '}'), nil
}

// actions are the bodies a caller may send, by method.
type actions struct {
	POST serializerInfo `json:"POST,omitempty"`
	PUT  serializerInfo `json:"PUT,omitempty"`
}

// metadata is the body of an OPTIONS answer.
type metadata struct {
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Renders     []string `json:"renders"`
	Parses      []string `json:"parses"`
	Actions     *actions `json:"actions,omitempty"`
}

// kindTypes are DRF's type names of the fields each kind is (its
// label_lookup): a parent or a ref is a PrimaryKeyRelatedField and refs a
// ManyRelatedField, both of which DRF calls a "field".
var kindTypes = map[record.Kind]string{
	record.KindText: "string", record.KindChoice: "choice", record.KindInteger: "integer",
	record.KindBoolean: "boolean", record.KindDate: "date", record.KindParent: "field",
	record.KindRef: "field", record.KindRefs: "field",
}

// label is the label DRF gives a model field: its name with spaces for
// underscores, the first letter capitalised.
func label(key string) string {
	s := strings.ReplaceAll(key, "_", " ")
	return strings.ToUpper(s[:1]) + s[1:]
}

// bodyInfo describes the body of a write of mode: the id (read only), then
// every field, required as DecodeInput requires it.
func (r *Resource) bodyInfo(mode Mode) serializerInfo {
	s := serializerInfo{{"id", fieldInfo{Type: "integer", ReadOnly: true, Label: "ID"}}}
	for i := range r.fields.List {
		f := &r.fields.List[i]
		info := fieldInfo{
			Type:     kindTypes[f.Kind],
			Required: mode == ModeCreate && f.Required || mode == ModeReplace && f.Replaced,
			Label:    label(f.Key),
			HelpText: f.Doc,
		}
		switch f.Kind {
		case record.KindText:
			info.MaxLength = f.MaxLen
		case record.KindInteger:
			info.MinValue, info.MaxValue = f.Min, f.Max
		case record.KindChoice:
			for _, c := range f.Choices {
				info.Choices = append(info.Choices, choiceInfo{Value: c, DisplayName: c})
			}
		}
		s = append(s, namedField{f.Key, info})
	}
	return s
}

// drfMethods are the methods in the order DRF lists them in Allow.
var drfMethods = []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch,
	http.MethodDelete, http.MethodHead, http.MethodOptions}

// AllowHeader lists methods in DRF's order, with HEAD wherever GET is (the
// server answers HEAD as GET) and without any other method DRF does not
// name; for the Allow header of OPTIONS and 405 answers.
func AllowHeader(methods []string) string {
	var out []string
	for _, m := range drfMethods {
		if slices.Contains(methods, m) || m == http.MethodHead && slices.Contains(methods, http.MethodGet) {
			out = append(out, m)
		}
	}
	return strings.Join(out, ", ")
}

// describeOperations returns an OPTIONS operation for every path of ops,
// in the order the paths first appear, answering DRF's metadata of the
// path's view and its Allow header. suffix names the view of each path
// after the resource, as DRF names a viewset's views: "List", "Instance",
// or the extra action's name.
func (r *Resource) describeOperations(ops []Operation, suffix func(path string) string) []Operation {
	one := camel(r.desc.Name)
	var paths []string
	methods := map[string][]string{}
	summaries := map[string][]string{}
	params := map[string][]Param{}
	for _, op := range ops {
		if op.ID == "" {
			continue // an answer that is not an operation (the tree's 405s)
		}
		if _, seen := methods[op.Path]; !seen {
			paths = append(paths, op.Path)
			for _, p := range op.Params {
				if p.In == "path" {
					params[op.Path] = append(params[op.Path], p)
				}
			}
		}
		methods[op.Path] = append(methods[op.Path], op.Method)
		summaries[op.Path] = append(summaries[op.Path], op.Summary)
	}
	var out []Operation
	for _, path := range paths {
		allow := AllowHeader(append(methods[path], http.MethodOptions))
		sfx := suffix(path)
		view := metadata{
			Name:        spaced(one) + " " + sfx,
			Description: strings.Join(summaries[path], " "),
			Renders:     []string{"application/json"},
			Parses:      []string{"application/json"},
		}
		viewer := mustJSON(view)
		var editor []byte // nil: the view takes no body
		record := false
		switch {
		case slices.Contains(methods[path], http.MethodPost):
			view.Actions = &actions{POST: r.bodyInfo(ModeCreate)}
			editor = mustJSON(view)
		case slices.Contains(methods[path], http.MethodPut):
			view.Actions = &actions{PUT: r.bodyInfo(ModeReplace)}
			editor, record = mustJSON(view), true
		}
		id := "describe" + one + strings.ReplaceAll(sfx, " ", "")
		switch sfx {
		case "List":
			id = "describe" + camel(r.desc.Path)
		case "Instance":
			id = "describe" + one
		}
		out = append(out, Operation{
			ID: id, Method: http.MethodOptions, Path: path,
			Summary: "Describe this path as Django REST Framework's OPTIONS does: its name, what it renders and parses, " +
				"and for an editor the fields a write takes (actions).",
			Params: params[path], Status: http.StatusOK, Response: "Metadata", Headers: []string{"Allow"},
			Errors: "401",
			handle: func(c *gin.Context) error {
				c.Header("Allow", allow)
				body := viewer
				if editor != nil && r.canWrite(c) {
					show := true
					if record {
						var err error
						if show, err = r.recordExists(c); err != nil {
							return err
						}
					}
					if show {
						body = editor
					}
				}
				c.Data(http.StatusOK, "application/json", body)
				return nil
			},
		})
	}
	return out
}

// canWrite reports whether the caller of c may write.
func (r *Resource) canWrite(c *gin.Context) bool {
	return r.opts.CanWrite == nil || r.opts.CanWrite(c)
}

// recordExists reports whether the record of the path's id exists, as
// DRF's get_object finds out for a PUT's metadata.
func (r *Resource) recordExists(c *gin.Context) (bool, error) {
	id, ok := parseID(c.Param("id"))
	if !ok {
		return false, nil
	}
	_, err := r.Get(c.Request.Context(), id)
	if err != nil {
		if apierror.As(err).Kind == apierror.NotFound {
			return false, nil
		}
		return false, err
	}
	return true, nil
}

// spaced turns "LeaveType" into "Leave Type", as DRF names views after
// their class.
func spaced(s string) string {
	var b strings.Builder
	for i, c := range s {
		if i > 0 && c >= 'A' && c <= 'Z' {
			b.WriteByte(' ')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// mustJSON encodes what registration builds, which always encodes.
func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic("resource: encoding metadata: " + err.Error())
	}
	return b
}
