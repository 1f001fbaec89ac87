package server_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"personnel/auth"
	"personnel/config"
	"personnel/db/dbtest"
	"personnel/logging"
	"personnel/server"
)

// heldHasher is bcrypt that can be held: while hold is set, every
// comparison waits for release. It counts comparisons and the most that
// ran at once.
type heldHasher struct {
	hold            atomic.Bool
	release         chan struct{}
	delay           atomic.Int64 // a duration each comparison takes at least
	n, now, maxSeen atomic.Int64
}

func newHeldHasher() *heldHasher { return &heldHasher{release: make(chan struct{})} }

func (h *heldHasher) Compare(hash []byte, password string) error {
	h.n.Add(1)
	cur := h.now.Add(1)
	defer h.now.Add(-1)
	for {
		seen := h.maxSeen.Load()
		if cur <= seen || h.maxSeen.CompareAndSwap(seen, cur) {
			break
		}
	}
	if h.hold.Load() {
		<-h.release
	}
	if d := time.Duration(h.delay.Load()); d > 0 {
		time.Sleep(d) // a slow hash, not a measurement
	}
	return bcrypt.CompareHashAndPassword(hash, []byte(password))
}

// forEachBackendHeld runs fn on every backend with an API whose password
// checks go through a heldHasher.
func forEachBackendHeld(t *testing.T, fn func(t *testing.T, a *authAPI, h *heldHasher), adjust ...func(*config.Config)) {
	t.Parallel()
	for _, b := range dbtest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			clk, h := newClock(), newHeldHasher()
			a := newAPIWith(t, b, []server.Option{server.WithAuthOptions(auth.Options{Clock: clk.Now, Hasher: h})}, adjust...)
			fn(t, &authAPI{api: a, clock: clk, coll: res{server.CompiledResources()[0]}.coll()}, h)
		})
	}
}

// within waits for a value from ch, failing the test after a generous
// time: what is awaited happens at once when the code is right.
func within[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(20 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

func TestLogin_ConcurrentGuessesAreCheckedAtMostTheLimit(t *testing.T) {
	forEachBackendHeld(t, func(t *testing.T, a *authAPI, h *heldHasher) {
		a.unavailable = true // 503 is a right answer to a guess when the queue is full
		limit := a.cfg.LoginFailuresUser
		before := h.n.Load()
		h.hold.Store(true)
		statuses := make(chan int, 20)
		var wg sync.WaitGroup
		for i := range 19 {
			wg.Go(func() {
				statuses <- a.tryLogin(testUser, "guess-"+strconv.Itoa(i), "198.51.100."+strconv.Itoa(i+1)).Status
			})
		}
		// All but the attempts counted before their check are refused at
		// once (429, or 503 when the hashing queue is full), while the
		// checked ones are held in the hasher.
		for range 19 - limit {
			if st := within(t, statuses, "the guesses past the limit to be refused"); st != http.StatusTooManyRequests && st != http.StatusServiceUnavailable {
				t.Fatalf("a guess answered %d while the hasher was held", st)
			}
		}
		// The right password, last, is refused too.
		right := make(chan *response, 1)
		go func() { right <- a.tryLogin(testUser, testPassword, "198.51.100.200") }()
		wantError(t, within(t, right, "the right password to be answered"), http.StatusTooManyRequests)
		close(h.release)
		wg.Wait()
		close(statuses)
		for st := range statuses {
			if st != http.StatusBadRequest {
				t.Errorf("a checked guess answered %d, want 400", st)
			}
		}
		if n := h.n.Load() - before; n > int64(limit) {
			t.Fatalf("%d passwords checked in a burst of 20, limit %d", n, limit)
		}
	}, func(c *config.Config) { c.LoginFailuresUser, c.LoginFailuresAddr = 5, 1000 })
}

func TestLogin_ConcurrentHashingIsBoundedAndTheRestGet503AtOnce(t *testing.T) {
	forEachBackendHeld(t, func(t *testing.T, a *authAPI, h *heldHasher) {
		a.unavailable = true
		h.hold.Store(true)
		answers := make(chan *response, 60)
		var wg sync.WaitGroup
		for i := range 60 {
			wg.Go(func() {
				answers <- a.tryLogin("flood"+strconv.Itoa(i), "guess", "203.0.113."+strconv.Itoa(i+1))
			})
		}
		busy := within(t, answers, "a login beyond the bound to be turned away")
		wantError(t, busy, http.StatusServiceUnavailable)
		if busy.Header.Get("Retry-After") == "" || !strings.Contains(string(busy.Body), "Too many passwords are being checked") {
			t.Fatalf("turned away without Retry-After or an honest message: %v %s", busy.Header, busy.Body)
		}
		close(h.release)
		wg.Wait()
		if m := h.maxSeen.Load(); m > int64(runtime.NumCPU()) {
			t.Fatalf("%d passwords hashed at once on %d CPUs", m, runtime.NumCPU())
		}
	}, func(c *config.Config) { c.LoginFailuresUser, c.LoginFailuresAddr = 1000, 1000 })
}

func TestLogin_ThrottleBookkeepingOutlivesTheRequestsDatabaseDeadline(t *testing.T) {
	forEachBackendHeld(t, func(t *testing.T, a *authAPI, h *heldHasher) {
		h.delay.Store(int64(a.cfg.DBTimeout + 200*time.Millisecond)) // every hash outlasts the request's deadline
		// Right passwords are forgiven however long the hash took...
		for i := range a.cfg.LoginFailuresUser + 1 {
			if resp := a.tryLogin(testUser, testPassword, "198.51.100."+strconv.Itoa(i+1)); resp.Status != http.StatusOK {
				t.Fatalf("slow login %d: %s", i+1, resp)
			}
		}
		// ...and wrong ones are answered and counted.
		for i := range a.cfg.LoginFailuresUser {
			wantNonField(t, a.tryLogin(testUser, "guess", "198.51.100."+strconv.Itoa(i+10)), "Unable to log in with provided credentials.")
		}
		h.delay.Store(0)
		wantError(t, a.tryLogin(testUser, testPassword, "198.51.100.99"), http.StatusTooManyRequests)
	}, func(c *config.Config) { c.DBTimeout, c.LoginFailuresUser = time.Second, 2 })
}

// syncBuffer is a log destination shared by concurrent requests.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestLogin_InternalErrorIs500WithAnErrorLogNeverA401(t *testing.T) {
	var logs syncBuffer
	old := slog.Default()
	slog.SetDefault(logging.New(&logs, "json", slog.LevelDebug))
	t.Cleanup(func() { slog.SetDefault(old) })
	forEachBackendAuth(t, func(t *testing.T, a *authAPI) {
		a.addUser("corrupt", auth.RoleViewer, "corrupt-password")
		pools := a.db.Pools()
		w := pools["write"]
		if w == nil { // one pool, named after the server
			w = pools[a.backend]
		}
		for i, break_ := range []string{
			"UPDATE personnel_user SET password_hash = 'not a bcrypt hash' WHERE username = 'corrupt'",
			"DROP TABLE personnel_login_failure",
		} {
			if _, err := w.Exec(break_); err != nil {
				t.Fatal(err)
			}
			for _, path := range []string{loginPath, tokenLoginPath} {
				id := fmt.Sprintf("internal-%s-%d-%s", a.backend, i, strings.Trim(path, "/"))
				body, _ := json.Marshal(map[string]string{"username": "corrupt", "password": "corrupt-password"})
				req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("X-Request-ID", id)
				rec := httptest.NewRecorder()
				a.h.ServeHTTP(rec, req)
				if rec.Code != http.StatusInternalServerError || rec.Body.String() != `{"code":500,"msg":"A server error occurred.","detail":"A server error occurred."}` {
					t.Fatalf("%s: %d %s, want the contract's 500", break_, rec.Code, rec.Body)
				}
				if !slices.ContainsFunc(strings.Split(logs.String(), "\n"), func(l string) bool {
					return strings.Contains(l, `"level":"ERROR"`) && strings.Contains(l, `"request_id":"`+id+`"`)
				}) {
					t.Fatalf("%s: no ERROR log line for request %s", break_, id)
				}
			}
		}
	})
}

// p99 is the 99th percentile of ds.
func p99(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[(len(s)*99)/100]
}

// readsTimed times reads of the collection with key, one after another,
// until until says enough.
func readsTimed(t *testing.T, a *authAPI, key string, until func(n int) bool) []time.Duration {
	var ds []time.Duration
	for n := 0; !until(n); n++ {
		req := httptest.NewRequest(http.MethodGet, a.coll, nil)
		req.Header.Set("Authorization", "Token "+key)
		rec := httptest.NewRecorder()
		start := time.Now()
		a.h.ServeHTTP(rec, req)
		ds = append(ds, time.Since(start))
		if rec.Code != http.StatusOK {
			t.Fatalf("read: %d %s", rec.Code, rec.Body)
		}
	}
	return ds
}

// Not parallel: this measures latency, and two floods (or any other test)
// at once would measure each other. Parallel tests wait until it is done.
func TestLogin_TokenReadsStayFastDuringAFloodOfLogins(t *testing.T) {
	for _, b := range dbtest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) { tokenReadsDuringFlood(t, b) })
	}
}

func tokenReadsDuringFlood(t *testing.T, b dbtest.Backend) {
	a := &authAPI{api: newAPI(t, b, func(c *config.Config) {
		c.BcryptCost = 10 // a real hash, as a flood makes the server compute
		c.LoginFailuresUser, c.LoginFailuresAddr = 1<<30, 1<<30
	}), coll: res{server.CompiledResources()[0]}.coll()}
	{
		key := a.keyLogin(testUser, testPassword)
		readsTimed(t, a, key, func(n int) bool { return n == 50 }) // warm up
		idle := p99(readsTimed(t, a, key, func(n int) bool { return n == 300 }))

		// 100 clients log in with wrong passwords at once, again and
		// again; a client turned away waits as Retry-After says.
		stop := make(chan struct{})
		var wg sync.WaitGroup
		var logins, busy, unavailable atomic.Int64
		for i := range 100 {
			wg.Go(func() {
				body, _ := json.Marshal(map[string]string{"username": "flood" + strconv.Itoa(i), "password": "guess"})
				for {
					select {
					case <-stop:
						return
					default:
					}
					req := httptest.NewRequest(http.MethodPost, loginPath, bytes.NewReader(body))
					req.Header.Set("Content-Type", "application/json")
					req.RemoteAddr = fmt.Sprintf("203.0.113.%d:40000", i+1)
					rec := httptest.NewRecorder()
					a.h.ServeHTTP(rec, req)
					logins.Add(1)
					if rec.Code == http.StatusServiceUnavailable {
						busy.Add(1)
						if strings.Contains(rec.Body.String(), "database") {
							unavailable.Add(1)
						}
						secs, _ := strconv.Atoi(rec.Header().Get("Retry-After"))
						select {
						case <-stop:
						case <-time.After(time.Duration(secs) * time.Second):
						}
					}
				}
			})
		}
		start := time.Now()
		flood := p99(readsTimed(t, a, key, func(n int) bool { return n >= 300 && time.Since(start) > 2*time.Second }))
		close(stop)
		wg.Wait()
		t.Logf("token read p99: idle %v, during a flood of 100 concurrent logins %v (%d logins, %d turned away)", idle, flood, logins.Load(), busy.Load())
		// A few times the idle value, with room for a machine whose two
		// CPUs the database shares: without the bound, reads on MariaDB
		// took seconds.
		if flood > 10*idle+10*time.Millisecond && !raceDetector {
			t.Errorf("token read p99 %v during the flood, %v idle", flood, idle)
		}
		// Logins turned away are told why, never blamed on the database
		// (which is what a request that waited for the CPU past its
		// database deadline used to say).
		if n := unavailable.Load(); n > 0 {
			t.Errorf("%d logins during the flood were answered that the database is unavailable", n)
		}
	}
}
