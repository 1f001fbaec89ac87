package resource

import (
	"fmt"
	"math"
	"net/http"

	"github.com/gin-gonic/gin"

	"personnel/apierror"
	"personnel/jsonbody"
)

// The handlers only move values between HTTP and the typed operations
// above: parse, call, render. They never pick a status for an error.

func (r *Resource[T]) handleList(c *gin.Context) {
	q, err := r.ParseQuery(c.Request.URL.Query())
	if err != nil {
		fail(c, err)
		return
	}
	p, err := r.List(c.Request.Context(), q)
	if err != nil {
		fail(c, err)
		return
	}
	r.writePage(c, p)
}

// writePage renders a page in the list envelope, with links to its
// neighbours.
func (r *Resource[T]) writePage(c *gin.Context, p Page) {
	var next, previous string
	if p.Page < p.LastPage() {
		next = r.opts.Links.Page(c.Request, p.Page+1)
	}
	if p.Page > 1 {
		previous = r.opts.Links.Page(c.Request, p.Page-1)
	}
	body := r.appendEnvelope(make([]byte, 0, 128+96*len(p.Rows)), p.Count, next, previous, p.Rows)
	c.Data(http.StatusOK, "application/json", body)
}

func (r *Resource[T]) handleDescendants(c *gin.Context) {
	id, ok := parseID(c.Param("id"))
	if !ok {
		fail(c, apierror.NotFoundError())
		return
	}
	q, err := r.ParseQuery(c.Request.URL.Query())
	if err != nil {
		fail(c, err)
		return
	}
	p, err := r.Descendants(c.Request.Context(), id, q)
	if err != nil {
		fail(c, err)
		return
	}
	r.writePage(c, p)
}

func (r *Resource[T]) handleAncestors(c *gin.Context) {
	id, ok := parseID(c.Param("id"))
	if !ok {
		fail(c, apierror.NotFoundError())
		return
	}
	rows, err := r.Ancestors(c.Request.Context(), id)
	if err != nil {
		fail(c, err)
		return
	}
	c.Data(http.StatusOK, "application/json", r.appendEnvelope(make([]byte, 0, 128+96*len(rows)), len(rows), "", "", rows))
}

func (r *Resource[T]) handleTree(c *gin.Context) {
	tq, err := ParseTreeQuery(c.Request.URL.Query())
	if err != nil {
		fail(c, err)
		return
	}
	nodes, err := r.Tree(c.Request.Context(), tq, r.opts.TreeNodeLimit)
	if err != nil {
		fail(c, err)
		return
	}
	b := append(make([]byte, 0, 4096), `{"code":0,"msg":"","data":`...)
	b = append(r.appendNodes(b, nodes), '}')
	c.Data(http.StatusOK, "application/json", b)
}

// onlyGET answers a method the tree path does not have.
func onlyGET(c *gin.Context) {
	c.Header("Allow", http.MethodGet)
	fail(c, apierror.New(apierror.MethodNotAllowed, fmt.Sprintf("Method %q not allowed.", c.Request.Method)))
}

func (r *Resource[T]) handleRead(c *gin.Context) {
	id, ok := parseID(c.Param("id"))
	if !ok {
		fail(c, apierror.NotFoundError())
		return
	}
	row, err := r.Get(c.Request.Context(), id)
	if err != nil {
		fail(c, err)
		return
	}
	c.Header("ETag", ETag(row))
	c.Data(http.StatusOK, "application/json", r.appendRecord(make([]byte, 0, 128), row))
}

func (r *Resource[T]) handleCreate(c *gin.Context) {
	in, err := r.readInput(c, true)
	if err != nil {
		fail(c, err)
		return
	}
	row, err := r.Create(c.Request.Context(), in)
	if err != nil {
		fail(c, err)
		return
	}
	c.Header("Location", r.opts.Links.Record(c.Request, row.ID))
	c.Header("ETag", ETag(row))
	c.Data(http.StatusCreated, "application/json", r.appendRecord(make([]byte, 0, 128), row))
}

func (r *Resource[T]) handleUpdate(c *gin.Context) { r.update(c, true) }
func (r *Resource[T]) handlePatch(c *gin.Context)  { r.update(c, false) }

func (r *Resource[T]) update(c *gin.Context, full bool) {
	id, ok := parseID(c.Param("id"))
	if !ok {
		fail(c, apierror.NotFoundError())
		return
	}
	in, err := r.readInput(c, full)
	if err != nil {
		// As in Django REST Framework, a missing record is a 404 whatever
		// the body; the look-up costs nothing on the path that succeeds.
		if _, gerr := r.Get(c.Request.Context(), id); gerr != nil {
			err = gerr
		}
		fail(c, err)
		return
	}
	row, err := r.Update(c.Request.Context(), id, in, ParsePrecondition(c.Request.Header.Values("If-Match")))
	if err != nil {
		fail(c, err)
		return
	}
	c.Header("ETag", ETag(row))
	c.Data(http.StatusOK, "application/json", r.appendRecord(make([]byte, 0, 128), row))
}

func (r *Resource[T]) handleDelete(c *gin.Context) {
	id, ok := parseID(c.Param("id"))
	if !ok {
		fail(c, apierror.NotFoundError())
		return
	}
	if err := r.Delete(c.Request.Context(), id, ParsePrecondition(c.Request.Header.Values("If-Match"))); err != nil {
		fail(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}

func (r *Resource[T]) readInput(c *gin.Context, full bool) (Input, error) {
	m, err := jsonbody.Object(c.Request, r.opts.BodyLimit)
	if err != nil {
		return Input{}, err
	}
	return r.DecodeInput(m, full)
}

// parseID parses a path id: ASCII digits naming a positive int. Anything
// else names no record.
func parseID(s string) (int, bool) {
	n, ok := positiveInt(s)
	return n, ok && n != math.MaxInt
}

// fail writes err as the response and stops the handler chain.
func fail(c *gin.Context, err error) {
	apierror.Write(c.Request.Context(), c.Writer, err)
	c.Abort()
}
