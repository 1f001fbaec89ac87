// Talking to the service: the JSON API with the session's token, signing
// in and out, and keeping the token fresh.
//
// The token is a JWT from /jwt-api-token-auth/, kept in memory and in
// sessionStorage (so a reload keeps the session in this tab, and closing
// the tab ends it), never in a cookie: the browser never sends it by
// itself, so there is nothing for another site to forge (no CSRF). It is
// refreshed at three quarters of its lifetime through
// /jwt-api-token-refresh/; when that is refused (the refresh window is
// over, the user was disabled) the session ends when the token expires,
// and the sign-in page says so. A request answered 401 tries one refresh
// and is sent again.

const STORAGE_KEY = "personnel.session";

// Every address is relative to this page (.../admin/), so the UI works
// wherever the service is mounted.
const serviceRoot = new URL("../", document.baseURI);

// API is where the resources are served, as the OpenAPI document's paths
// name it.
export const API = "/personnel/api";

// address returns the URL of a path of the service ("/personnel/api/...").
export function address(path, query) {
  const u = new URL(path.replace(/^\//, ""), serviceRoot);
  if (query) {
    for (const [k, v] of Object.entries(query)) {
      if (v !== undefined && v !== null && v !== "") u.searchParams.set(k, String(v));
    }
  }
  return u;
}

// ApiError is an answer that is not a success: status is the HTTP status
// (0 when the service could not be reached) and body the error body
// ({code, msg, errors...}) when there is one.
export class ApiError extends Error {
  constructor(status, body, fallback) {
    super((body && typeof body.msg === "string" && body.msg) || fallback || `The service answered ${status}.`);
    this.status = status;
    this.body = body;
  }
  // fieldErrors returns the messages of each invalid field ({} for none).
  get fieldErrors() {
    return (this.body && this.body.errors && typeof this.body.errors === "object") ? this.body.errors : {};
  }
}

// Messages the sign-in page shows.
export const EXPIRED = "Your session has expired. Sign in again.";
export const SIGNED_OUT = "You have signed out.";

let session = null; // {token, username, role, lifetime (ms), received (ms, this browser's clock)}
let refreshTimer = 0;
let expiryTimer = 0;
let refreshing = null; // the refresh under way, shared by every caller
let expiredHandler = () => {};

// onExpired sets what happens when the session ends by itself.
export function onExpired(fn) {
  expiredHandler = fn;
}

// user returns {username, role} of the session, or null.
export function user() {
  return session && { username: session.username, role: session.role };
}

// claims decodes a JWT's payload without checking it (the server does).
function claims(token) {
  try {
    const part = token.split(".")[1].replace(/-/g, "+").replace(/_/g, "/");
    const padded = part + "=".repeat((4 - (part.length % 4)) % 4);
    return JSON.parse(atob(padded));
  } catch (e) {
    return {};
  }
}

function persist() {
  try {
    if (session) sessionStorage.setItem(STORAGE_KEY, JSON.stringify(session));
    else sessionStorage.removeItem(STORAGE_KEY);
  } catch (e) {
    // Storage refused (private mode): the session lives in memory only.
  }
}

// schedule sets the refresh at three quarters of the token's lifetime and
// the end of the session at its expiry, both measured from when the token
// arrived: the browser's clock need not agree with the server's.
function schedule() {
  clearTimeout(refreshTimer);
  clearTimeout(expiryTimer);
  if (!session || !(session.lifetime > 0)) return;
  const age = Date.now() - session.received;
  refreshTimer = setTimeout(() => { refresh(); }, Math.max(1000, session.lifetime * 0.75 - age));
  expiryTimer = setTimeout(expire, Math.max(1000, session.lifetime - age));
}

// accept keeps a new token; lifetime is worked out at sign-in (a refreshed
// token keeps its original login time, so only the first one tells it).
function accept(token, lifetime) {
  session = { ...(session || {}), token, lifetime, received: Date.now() };
  persist();
  schedule();
}

// restore picks up the session this tab had before a reload; false when
// there is none.
export function restore() {
  try {
    const saved = JSON.parse(sessionStorage.getItem(STORAGE_KEY) || "null");
    if (saved && typeof saved.token === "string") {
      session = saved;
      schedule();
      return true;
    }
  } catch (e) {
    // Nothing usable stored.
  }
  return false;
}

// signIn trades a username and password for a token, then learns the
// user's role. It throws ApiError with the server's message on refusal.
export async function signIn(username, password) {
  end();
  const res = await send("POST", "/jwt-api-token-auth/", { body: { username, password }, anonymous: true });
  const c = claims(res.data.token);
  const lifetime = c.exp && c.orig_iat ? (c.exp - c.orig_iat) * 1000 : 0;
  accept(res.data.token, lifetime);
  await whoami();
  return user();
}

// whoami asks the service who the token belongs to, and keeps the answer.
export async function whoami() {
  const res = await send("GET", `${API}/whoami/`);
  session.username = res.data.username;
  session.role = res.data.role;
  persist();
  return user();
}

// end forgets the session.
function end() {
  clearTimeout(refreshTimer);
  clearTimeout(expiryTimer);
  session = null;
  refreshing = null;
  persist();
}

// signOut ends the session. Tokens are not kept by the server, so there is
// nothing to revoke; the token is forgotten here.
export function signOut() {
  end();
}

// expire ends the session and tells the page.
function expire() {
  if (!session) return;
  end();
  expiredHandler(EXPIRED);
}

// refresh trades the token for a newer one; false when refused.
function refresh() {
  if (!session) return Promise.resolve(false);
  if (!refreshing) {
    const old = session.token;
    refreshing = send("POST", "/jwt-api-token-refresh/", { body: { token: old }, anonymous: true })
      .then((res) => {
        if (session && session.token === old) accept(res.data.token, session.lifetime);
        return true;
      })
      .catch((e) => {
        if (e.status === 0 && session) {
          // The service did not answer: try again shortly, before expiry.
          clearTimeout(refreshTimer);
          refreshTimer = setTimeout(() => { refresh(); }, 15000);
        }
        return false;
      })
      .finally(() => { refreshing = null; });
  }
  return refreshing;
}

// request makes a request and returns its Response, whatever its status
// but 401. opts: body (sent as JSON), form (a FormData, sent as
// multipart), query, headers, accept (the Accept header; JSON unless
// given), anonymous (no token). A 401 on a request with the token
// refreshes it once and sends the request again; when that fails the
// session has expired. A service that cannot be reached throws ApiError
// with status 0.
async function request(method, path, opts = {}) {
  const headers = new Headers(opts.headers || {});
  headers.set("Accept", opts.accept || "application/json");
  const token = !opts.anonymous && session ? session.token : "";
  if (token) headers.set("Authorization", `JWT ${token}`);
  let body;
  if (opts.form !== undefined) {
    body = opts.form; // the browser sets the multipart type and boundary
  } else if (opts.body !== undefined) {
    headers.set("Content-Type", "application/json");
    body = JSON.stringify(opts.body);
  }
  let res;
  try {
    res = await fetch(address(path, opts.query), { method, headers, body, cache: "no-store", credentials: "omit" });
  } catch (e) {
    throw new ApiError(0, null, "The service cannot be reached. Check the connection and try again.");
  }
  if (res.status === 401 && token) {
    if (!opts.retried && (await refresh())) {
      return request(method, path, { ...opts, retried: true });
    }
    expire();
    throw new ApiError(401, null, EXPIRED);
  }
  return res;
}

// failure returns the ApiError of an answer that is not a success, with
// its JSON body when it has one.
async function failure(res) {
  let data = null;
  try {
    data = JSON.parse(await res.text());
  } catch (e) {
    data = null;
  }
  return new ApiError(res.status, data);
}

// send makes a request (opts as request's) and returns {data, etag,
// status}, data the JSON body. Any failure throws ApiError.
export async function send(method, path, opts = {}) {
  const res = await request(method, path, opts);
  if (!res.ok) throw await failure(res);
  let data = null;
  const text = res.status === 204 ? "" : await res.text();
  if (text) {
    try {
      data = JSON.parse(text);
    } catch (e) {
      data = null;
    }
  }
  return { data, etag: res.headers.get("ETag"), status: res.status };
}

// download GETs a file with the token (which no link could carry) and
// returns {blob, filename}, the name the service gives in its
// Content-Disposition (fallback when it gives none). A failure throws
// ApiError with the service's message.
export async function download(path, query, fallback) {
  const res = await request("GET", path, { query, accept: "*/*" });
  if (!res.ok) throw await failure(res);
  const blob = await res.blob();
  return { blob, filename: filenameOf(res.headers.get("Content-Disposition")) || fallback };
}

// filenameOf reads the file name of a Content-Disposition header
// (filename*=UTF-8''..., else filename="..."), without any directory.
function filenameOf(header) {
  if (!header) return "";
  let name = "";
  const star = /filename\*\s*=\s*(?:UTF-8|utf-8)''([^;]+)/.exec(header);
  if (star) {
    try {
      name = decodeURIComponent(star[1].trim());
    } catch (e) {
      name = "";
    }
  }
  if (!name) {
    const plain = /filename\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^;]+))/.exec(header);
    if (plain) name = plain[1] !== undefined ? plain[1].replace(/\\(.)/g, "$1") : plain[2].trim();
  }
  return name.replace(/^.*[\\/]/, "");
}

// loadDocument fetches the OpenAPI document (public: no token).
export async function loadDocument() {
  const res = await send("GET", `${API}/openapi.json`, { anonymous: true });
  return res.data;
}
