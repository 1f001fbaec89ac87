package web_test

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"personnel/config"
	"personnel/server"
)

// control is a form or filter control as the page draws it.
type control struct {
	Key, Tag, Type, Role, MaxLength, Min, Max, Value, Label string
	Options                                                 []string
}

// describeControls is JavaScript describing the controls of the fields
// in the record pane, each by its field's key.
const describeControls = `[...document.querySelectorAll(".detail-pane [data-field]")].map((d) => {
	const c = d.querySelector("input, select");
	return {
		Key: d.dataset.field, Tag: c.tagName.toLowerCase(), Type: c.tagName === "INPUT" ? c.type : "",
		Role: c.getAttribute("role") || "", MaxLength: c.getAttribute("maxlength") || "",
		Min: c.getAttribute("min") || "", Max: c.getAttribute("max") || "",
		Value: c.type === "checkbox" ? String(c.checked) : c.value,
		Label: (document.querySelector('label[for="' + c.id + '"]') || {textContent: ""}).textContent,
		Options: c.tagName === "SELECT" ? [...c.options].map((o) => o.value) : [],
	};
})`

// wantControl is the control a field should have: a text input with the
// field's maximum length, a number input with its bounds, a date input,
// a select of its choices, a checkbox, or the combobox of a picker (the
// parent, a reference, a list of references).
func wantControl(r res, key string) control {
	c := control{Key: key, Tag: "input", Type: "text", Label: humanize(key)}
	switch key {
	case r.Fields.Code:
		c.MaxLength = strconv.Itoa(r.Limits.Code)
		c.Label += " *"
		return c
	case r.Fields.Name:
		c.MaxLength = strconv.Itoa(r.Limits.Name)
		c.Label += " *"
		return c
	case r.Fields.Parent:
		c.Role = "combobox"
		return c
	}
	for _, e := range r.Extra {
		if e.Name != key {
			continue
		}
		if e.Required {
			c.Label += " *"
		}
		switch e.Type {
		case config.TypeString:
			if e.MaxLength > 0 {
				c.MaxLength = strconv.Itoa(e.MaxLength)
			}
		case config.TypeInteger:
			c.Type = "number"
			if e.Min != nil {
				c.Min = strconv.FormatInt(*e.Min, 10)
			}
			if e.Max != nil {
				c.Max = strconv.FormatInt(*e.Max, 10)
			}
		case config.TypeDate:
			c.Type = "date"
		case config.TypeBoolean:
			c.Type = "checkbox"
		case config.TypeChoice:
			c.Tag, c.Type = "select", ""
			if !e.Required {
				c.Options = []string{""}
			}
			c.Options = append(c.Options, e.Choices...)
		case config.TypeRef, config.TypeRefs:
			c.Role = "combobox"
		}
	}
	return c
}

// same compares what a control is (not its value).
func (c control) same(d control) bool {
	return c.Key == d.Key && c.Tag == d.Tag && c.Type == d.Type && c.Role == d.Role && c.MaxLength == d.MaxLength &&
		c.Min == d.Min && c.Max == d.Max && c.Label == d.Label && slices.Equal(c.Options, d.Options)
}

// shown is a value of an extra field as its control holds it.
func shown(v any) string {
	switch v := v.(type) {
	case bool:
		return strconv.FormatBool(v)
	}
	return fmt.Sprint(v)
}

// TestAdmin_EveryResourceShowsItsFieldsWithTheirInputs holds every
// resource compiled in, whatever config declared, to the same page: a
// column and an input of the right kind for each field, a control for
// each filter, defaults in the form for a new record. The generator's
// end-to-end test runs it on resources added by config.
func TestAdmin_EveryResourceShowsItsFieldsWithTheirInputs(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *site) {
		page := s.open(t)
		page.signIn(editorName)
		for _, desc := range server.CompiledResources() {
			r := res{desc}
			t.Run(r.Name, func(t *testing.T) {
				tb := page.on(t)
				keys := []string{r.Fields.Code, r.Fields.Name}
				if r.Hierarchical() {
					keys = append(keys, r.Fields.Parent)
				}
				for _, e := range r.Extra {
					keys = append(keys, e.Name)
				}
				id := s.add(r, "SHOWN", "Shown", nil)

				tb.goTo("#/" + r.Path + "/table")
				tb.waitText(".list-pane td", "SHOWN")
				headers := eval[[]string](tb, `[...document.querySelectorAll(".list-pane th")].map((th) => th.textContent.replace(/[▲▼]/g, "").trim())`)
				want := []string{"Id"}
				for _, k := range keys {
					want = append(want, humanize(k))
				}
				if !slices.Equal(headers, want) {
					t.Errorf("columns %q, want %q", headers, want)
				}

				filters := map[string]string{r.Fields.Code + "_icontains": "input search", r.Fields.Name + "_icontains": "input search"}
				for _, e := range r.Extra {
					for _, f := range e.Filters {
						param := e.Name + "_" + f
						if f == config.FilterExact {
							param = e.Name
						}
						kind := "input search"
						switch {
						case f == config.FilterIsNull, e.Type == config.TypeBoolean, e.Type == config.TypeChoice && f == config.FilterExact:
							kind = "select "
						case f != config.FilterIContains && e.Type == config.TypeInteger:
							kind = "input number"
						case f != config.FilterIContains && e.Type == config.TypeDate:
							kind = "input date"
						case e.IsRef():
							kind = "input hidden" // the ids the pickers beside it chose
						}
						filters[param] = kind
					}
				}
				for param, kind := range filters {
					got := eval[string](tb, fmt.Sprintf(`(() => { const c = document.querySelector('[data-param=%q]'); return c ? c.tagName.toLowerCase() + " " + (c.tagName === "INPUT" ? c.type : "") : "none"; })()`, param))
					if got != kind {
						t.Errorf("the filter %s is %q, want %q", param, got, kind)
					}
					if kind == "input hidden" && !eval[bool](tb, fmt.Sprintf(`document.querySelector('[data-param=%q]').closest(".field").querySelector("input[role=combobox]") !== null`, param)) {
						t.Errorf("the filter %s has no picker", param)
					}
				}

				tb.goTo(fmt.Sprintf("#/%s/table/%d", r.Path, id))
				tb.waitText(".detail-pane h2", "Shown")
				controls := eval[[]control](tb, describeControls)
				if len(controls) != len(keys) {
					t.Fatalf("the form has %d fields, want %d: %+v", len(controls), len(keys), controls)
				}
				for i, c := range controls {
					if w := wantControl(r, keys[i]); !c.same(w) {
						t.Errorf("field %d is %+v, want %+v", i, c, w)
					}
				}
				for i, e := range r.Extra {
					switch {
					case e.Required && e.IsRef():
						// The picker shows the record referred to, by name and code.
						if got, want := tb.text(fmt.Sprintf(`.detail-pane [data-field=%q]`, e.Name)), targetName+" ("+targetCode+")"; !strings.Contains(got, want) {
							t.Errorf("%s shows %q, want the stored %q", e.Name, got, want)
						}
					case e.Required:
						if got, want := controls[len(keys)-len(r.Extra)+i].Value, shown(sample(e)); got != want {
							t.Errorf("%s shows %q, want the stored %q", e.Name, got, want)
						}
					}
				}

				tb.goTo(fmt.Sprintf("#/%s/table/new", r.Path))
				tb.waitText(".detail-pane h2", "New "+r.singular())
				controls = eval[[]control](tb, describeControls)
				for i, e := range r.Extra {
					if e.Default != nil {
						if got := controls[len(keys)-len(r.Extra)+i].Value; got != *e.Default {
							t.Errorf("a new record's %s starts at %q, want the default %q", e.Name, got, *e.Default)
						}
					}
				}
			})
		}
	})
}
