package openapi_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"personnel/openapi"
	"personnel/resource"
)

// document builds the document of ops and decodes what the tests look at.
func document(t *testing.T, in openapi.Input) (doc struct {
	Servers []struct{ URL string }
	Paths   map[string]map[string]struct {
		Responses map[string]struct {
			Headers map[string]any
			Content map[string]struct{ Schema map[string]any }
		}
	}
}) {
	t.Helper()
	data, err := openapi.Build(in)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

func TestBuild_HeadersBelongToTheirOperation(t *testing.T) {
	doc := document(t, openapi.Input{APIRoot: "/api", Operations: []resource.Operation{
		{ID: "createX", Method: http.MethodPost, Path: "/x/", Status: 201, Response: "X", Headers: []string{"ETag", "Location"}},
		{ID: "readX", Method: http.MethodGet, Path: "/x/{id}/", Status: 200, Response: "X", Headers: []string{"ETag"}},
	}})
	if h := doc.Paths["/api/x/"]["post"].Responses["201"].Headers; h["Location"] == nil || h["ETag"] == nil {
		t.Errorf("create lacks Location or ETag: %v", h)
	}
	if h := doc.Paths["/api/x/{id}/"]["get"].Responses["200"].Headers; h["Location"] != nil || h["ETag"] == nil {
		t.Errorf("read documents %v, want ETag only", h)
	}
}

func TestBuild_ErrorStatusesAreTypedWithTheErrorSchema(t *testing.T) {
	doc := document(t, openapi.Input{APIRoot: "/api", Operations: []resource.Operation{
		{ID: "deleteX", Method: http.MethodDelete, Path: "/x/{id}/", Status: 204, Errors: "401, 404, 409 still a parent"},
	}})
	responses := doc.Paths["/api/x/{id}/"]["delete"].Responses
	for _, status := range []string{"401", "404", "409"} {
		if ref := responses[status].Content["application/json"].Schema["$ref"]; ref != "#/components/schemas/Error" {
			t.Errorf("%s is typed %v, want the Error schema", status, ref)
		}
	}
	if _, ok := responses["400"]; ok {
		t.Error("a status the operation does not answer is documented")
	}
}

func TestBuild_ThePublicURLIsTheServer(t *testing.T) {
	if doc := document(t, openapi.Input{PublicURL: "https://hr.example.com/prefix"}); len(doc.Servers) != 1 || doc.Servers[0].URL != "https://hr.example.com/prefix" {
		t.Errorf("servers %+v", doc.Servers)
	}
	if doc := document(t, openapi.Input{}); doc.Servers != nil {
		t.Errorf("servers %+v without a public URL", doc.Servers)
	}
}
