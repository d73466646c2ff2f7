// REST calls with the user's key; every error becomes an Error carrying the API's code.
"use strict";

const Api = {
  base: "",
  key: "",

  async call(method, route, { params, json, body, headers } = {}) {
    const url = new URL(this.base + route);
    for (const [k, v] of Object.entries(params || {})) url.searchParams.set(k, v);
    const init = { method, headers: { Authorization: `Bearer ${this.key}`, ...(headers || {}) } };
    if (json !== undefined) {
      init.body = JSON.stringify(json);
      init.headers["Content-Type"] = "application/json";
    } else if (body !== undefined) {
      init.body = body;
    }
    const response = await fetch(url, init);
    if (!response.ok) throw await Api.error(response);
    return response;
  },

  async json(method, route, options) {
    return (await this.call(method, route, options)).json();
  },

  async error(response) {
    let code = `http-${response.status}`, message = response.statusText;
    try {
      const body = await response.json();
      code = body.error?.code || code;
      message = body.error?.message || body.message || message;
    } catch (_) { /* not JSON */ }
    const err = new Error(`${message} [${code}]`);
    err.code = code;
    err.status = response.status;
    return err;
  },
};
