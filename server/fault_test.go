package server_test

import (
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"personnel/db/dbtest"
	"personnel/server"
)

// proxy is a TCP proxy between the service and its database server that
// the test can break: "refuse" closes every connection and refuses new
// ones (a server that died), "hang" keeps connections open but passes
// nothing (a network that stopped answering). Only this test's traffic goes
// through it; the shared database server is never touched.
type proxy struct {
	upstream string
	addr     string
	mu       sync.Mutex
	ln       net.Listener
	conns    []net.Conn
	hang     bool
}

func newProxy(t *testing.T, upstream string) *proxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{upstream: upstream, addr: ln.Addr().String()}
	p.serve(ln)
	t.Cleanup(func() { p.refuse() })
	return p
}

func (p *proxy) serve(ln net.Listener) {
	p.ln = ln
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.pipe(c)
		}
	}()
}

func (p *proxy) pipe(client net.Conn) {
	p.mu.Lock()
	upstream := p.upstream
	p.mu.Unlock()
	server, err := net.Dial("tcp", upstream)
	if err != nil {
		client.Close()
		return
	}
	p.mu.Lock()
	p.conns = append(p.conns, client, server)
	p.mu.Unlock()
	copyUnlessHung := func(dst, src net.Conn) {
		buf := make([]byte, 32*1024)
		for {
			n, err := src.Read(buf)
			if err != nil {
				dst.Close()
				return
			}
			p.mu.Lock()
			hung := p.hang
			p.mu.Unlock()
			if hung {
				continue // swallow: the other side waits for ever
			}
			if _, err := dst.Write(buf[:n]); err != nil {
				src.Close()
				return
			}
		}
	}
	go copyUnlessHung(server, client)
	go copyUnlessHung(client, server)
}

// refuse closes every connection and stops listening.
func (p *proxy) refuse() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// hangUp lets connections in but passes nothing either way.
func (p *proxy) hangUp() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.hang = true
}

// restore passes traffic again, listening on the same address.
func (p *proxy) restore(t *testing.T) {
	p.mu.Lock()
	p.hang = false
	for _, c := range p.conns { // connections that swallowed bytes are out of step
		c.Close()
	}
	p.conns = nil
	listening := p.ln != nil
	p.mu.Unlock()
	if listening {
		return
	}
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		t.Fatalf("listening again on %s: %v", p.addr, err)
	}
	p.mu.Lock()
	p.serve(ln)
	p.mu.Unlock()
}

// When the database server (MySQL or PostgreSQL) goes away, requests fail
// within the database timeout with 503 and a message saying so (never
// hang, never 500 or a driver message), /readyz says not ready, and once
// the server is back the service recovers by itself.
func TestFault_DatabaseOutageIs503FastAndRecoversWithoutRestart(t *testing.T) {
	t.Parallel()
	networked := 0
	for _, b := range dbtest.Backends(t) {
		if !b.Networked() {
			continue
		}
		networked++
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			testOutage(t, b)
		})
	}
	if networked == 0 {
		t.Skip("needs a database server: set " + dbtest.EnvMySQLDSN + " or " + dbtest.EnvPostgresDSN)
	}
}

func testOutage(t *testing.T, b dbtest.Backend) {
	cfg := b.Config(t)
	p := newProxy(t, "")
	dsn, upstream, err := dbtest.WithAddr(cfg, p.addr)
	if err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	p.upstream = upstream
	p.mu.Unlock()
	cfg.DBDSN = dsn
	const dbTimeout = time.Second
	cfg.DBTimeout = dbTimeout
	d := dbtest.MustOpen(t, cfg)
	srv, err := server.New(cfg, d)
	if err != nil {
		t.Fatal(err)
	}
	a := &api{t: t, h: srv.Handler(), db: d, cfg: cfg, backend: b.Name, unavailable: true}
	a.addUser(testUser, "editor", testPassword)
	a.token = a.login(testUser, testPassword)
	coll := res{server.CompiledResources()[0]}.coll()

	within := func(what string, limit time.Duration, want int) {
		t.Helper()
		start := time.Now()
		var resp *response
		for {
			resp = a.do(http.MethodGet, what, nil)
			if resp.Status == want || time.Since(start) > limit {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		if resp.Status != want {
			t.Fatalf("%s: %s after %v, want %d", what, resp, time.Since(start).Round(time.Millisecond), want)
		}
		if want == http.StatusServiceUnavailable && !strings.Contains(string(resp.Body), "database is unavailable") {
			t.Fatalf("%s: 503 without saying why: %s", what, resp.Body)
		}
	}
	oneRequest := func(what string, limit time.Duration, want int) {
		t.Helper()
		start := time.Now()
		resp := a.do(http.MethodGet, what, nil)
		took := time.Since(start)
		if resp.Status != want || took > limit {
			t.Fatalf("%s: %s in %v, want %d within %v", what, resp, took.Round(time.Millisecond), want, limit)
		}
	}

	within(coll, time.Second, http.StatusOK)
	for _, outage := range []struct {
		name  string
		start func()
		limit time.Duration // for one request to fail
	}{
		{"refused", p.refuse, 500 * time.Millisecond},
		{"hung", p.hangUp, dbTimeout + time.Second},
	} {
		t.Run(outage.name, func(t *testing.T) {
			outage.start()
			oneRequest(coll, outage.limit, http.StatusServiceUnavailable)
			oneRequest("/readyz", 2*time.Second+time.Second, http.StatusServiceUnavailable)
			resp := a.do(http.MethodPost, "/jwt-api-token-auth/", map[string]string{"username": testUser, "password": testPassword}, "Authorization", "")
			if resp.Status != http.StatusServiceUnavailable {
				t.Fatalf("login during the outage: %s", resp)
			}
			p.restore(t)
			within(coll, 10*time.Second, http.StatusOK)
			within("/readyz", 10*time.Second, http.StatusOK)
		})
	}
}
