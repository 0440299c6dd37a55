// The /api/v1 client: JSON in and out, RFC 9457 problem details turned into ApiError, and how to show one.

import { h } from "./dom.js";

const BASE = (typeof document !== "undefined" && document.body?.dataset.api) || "/api/v1";
const TOKEN_KEY = "cbt.api.token";

export class ApiError extends Error {
  /** status 0: the API could not be reached at all. */
  constructor(status, problem) {
    super(problem?.detail || problem?.title || `HTTP ${status}`);
    this.status = status;
    this.problem = problem || {};
  }
}

function url(path, params) {
  const query = new URLSearchParams();
  for (const [key, value] of Object.entries(params || {})) {
    if (value != null && value !== "") query.set(key, String(value));
  }
  const text = query.toString();
  return `${BASE}${path}${text ? `?${text}` : ""}`;
}

async function problemOf(response) {
  const text = await response.text();
  try {
    const body = JSON.parse(text);
    if (body && typeof body === "object") return { status: response.status, ...body };
  } catch { /* not JSON: fall through */ }
  return { status: response.status, title: response.statusText || `HTTP ${response.status}`, detail: text.slice(0, 500) };
}

async function send(path, init, params) {
  let response;
  try {
    response = await fetch(url(path, params), init);
  } catch (error) {
    throw new ApiError(0, { title: "The API cannot be reached", detail: String(error?.message || error) });
  }
  if (response.status === 401 && !init.method && typeof location !== "undefined") {
    // Reads need a token (api.auth.read_tokens) and the session is gone: sign in again, then come back here.
    location.assign(`/login?next=${encodeURIComponent(location.pathname + location.search)}`);
  }
  if (!response.ok) throw new ApiError(response.status, await problemOf(response));
  if (response.status === 204) return null;
  return response.json();
}

export function getJSON(path, params) {
  return send(path, { headers: { Accept: "application/json" } }, params);
}

export function postJSON(path, body, token) {
  return sendJSON("POST", path, body ?? {}, token);
}

/** A change (POST, PUT, DELETE) with a JSON body, when there is one, and the bearer token. */
export function sendJSON(method, path, body, token) {
  const headers = { Accept: "application/json", "Content-Type": "application/json" };
  if (token) headers.Authorization = `Bearer ${token}`;
  return send(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
}

export function modelPath(id, suffix = "") {
  return `/models/${encodeURIComponent(id)}${suffix}`;
}

export const token = {
  get: () => sessionStorage.getItem(TOKEN_KEY) || "",
  set: (value) => (value ? sessionStorage.setItem(TOKEN_KEY, value) : sessionStorage.removeItem(TOKEN_KEY)),
};

const HINTS = {
  0: "Is the api service running? The page retries when live events come back.",
  401: "The bearer token is missing or not accepted: enter one of the tokens in the api's config (api.auth.tokens).",
  403: "This server accepts no changes: no token is configured (api.auth.tokens), so mutations are disabled.",
  404: "It does not exist (any more): check the model id, or reload the page.",
};

/** A readable box for an ApiError (or any error): status, title, detail and what to do about it. */
export function problemBox(error) {
  const problem = error instanceof ApiError ? error.problem : { title: "Unexpected error", detail: String(error) };
  const status = error instanceof ApiError ? error.status : null;
  const hint = HINTS[status] || (status >= 500 ? "The server failed; its log has the details." : null);
  return h("div", { class: "problem", role: "alert", "data-status": status ?? "" },
    h("div", {},
      status ? h("span", { class: "problem-status" }, String(status)) : null,
      h("span", { class: "problem-title" }, problem.title || "Request failed")),
    problem.detail ? h("div", { class: "problem-detail" }, problem.detail) : null,
    hint ? h("div", { class: "problem-hint" }, hint) : null);
}
