// What the agent-tools and standing-agents pages share: text-only DOM helpers, the
// API token kept in the tab, and the core of their JSON requests.
//
// Not served on its own: api/service/ui.py puts it in front of each page's script
// (/ui/agent-tools.js, /ui/agents.js), which reads it as `agentrtUi`. Plain script,
// no build step, nothing loaded from elsewhere; every string from the API goes in the
// page as text, never parsed as markup.
'use strict';

const agentrtUi = (function () {
  // Both pages keep the token under this key: one token per tab.
  const TOKEN_KEY = 'agentrt.apiToken';

  const $ = (id) => document.getElementById(id);
  const enc = encodeURIComponent;

  // -- DOM helpers (text only) ------------------------------------------------------------

  /** An element with a class and children; strings become text nodes. */
  function el(tag, className, ...children) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    for (const child of children) {
      if (child !== null && child !== undefined) node.append(child);
    }
    return node;
  }

  function setText(id, value) {
    $(id).textContent = value === null || value === undefined ? '' : String(value);
  }

  function short(value, max) {
    const text = typeof value === 'string' ? value : JSON.stringify(value);
    return text.length > max ? text.slice(0, max - 1) + '…' : text;
  }

  function showBanner(message) {
    const banner = $('banner');
    banner.textContent = message;
    banner.hidden = !message;
  }

  /** A message line (#id) with its kind ('info' unless said: 'error'…) in data-kind. */
  function note(id, text, kind) {
    const node = $(id);
    node.textContent = text || '';
    node.dataset.kind = kind || 'info';
  }

  function setConnection(stateName, message) {
    const node = $('connection');
    node.dataset.state = stateName;
    node.textContent = message;
  }

  function sleep(ms) {
    return new Promise((resolve) => setTimeout(resolve, ms));
  }

  /** Ctrl+Enter (Cmd+Enter) in the field #fieldId submits the form #formId. */
  function submitOnCtrlEnter(fieldId, formId) {
    $(fieldId).addEventListener('keydown', (event) => {
      if (event.key === 'Enter' && (event.ctrlKey || event.metaKey)) $(formId).requestSubmit();
    });
  }

  // -- the API ------------------------------------------------------------------------------

  class ApiFailure extends Error {
    constructor(status, body) {
      super((body && body.error) || `HTTP ${status}`);
      this.status = status;
      this.code = (body && body.code) || null;
      this.body = body;
    }

    describe() {
      return `${this.status}${this.code ? ' ' + this.code : ''}: ${this.message}`;
    }
  }

  function token() {
    try {
      return sessionStorage.getItem(TOKEN_KEY) || '';
    } catch (_err) {
      return '';
    }
  }

  /** Accept JSON (or what `extra` says), with the tab's bearer token if it keeps one. */
  function authHeaders(extra) {
    const headers = { Accept: 'application/json', ...(extra || {}) };
    const bearer = token();
    if (bearer) headers.Authorization = 'Bearer ' + bearer;
    return headers;
  }

  /** One JSON request: its answer's body, or an ApiFailure (status 0: no answer).
   *  `headers` defaults to authHeaders(); a write adds its JSON body (`{}` when none). */
  async function fetchJson(method, path, body, headers) {
    headers = headers || authHeaders();
    const init = { method, headers, credentials: 'same-origin', cache: 'no-store' };
    if (method !== 'GET') {
      headers['Content-Type'] = 'application/json';
      init.body = JSON.stringify(body === undefined ? {} : body);
    }
    let response;
    try {
      response = await fetch(path, init);
    } catch (err) {
      throw new ApiFailure(0, { error: 'The server did not answer (' + err.message + ')', code: 'network' });
    }
    const text = await response.text();
    let data = null;
    if (text) {
      try {
        data = JSON.parse(text);
      } catch (_err) {
        data = { error: short(text, 300) };
      }
    }
    if (!response.ok) throw new ApiFailure(response.status, data);
    return data;
  }

  /** A failure in words; `byCode` ({code: text}) words the page's own codes, after the 401. */
  function explain(err, byCode) {
    if (err instanceof ApiFailure) {
      if (err.status === 401) return 'Unauthorized: this daemon needs its bearer token (API token, at the top).';
      if (byCode && err.code && Object.prototype.hasOwnProperty.call(byCode, err.code)) return byCode[err.code];
      return err.describe();
    }
    return String(err && err.message ? err.message : err);
  }

  // -- the token form -----------------------------------------------------------------------

  /** The token form (#token, #token-form, #token-clear): shows the kept token; saving
   *  keeps the field's value (none: forgets it) for this tab, then calls `saved()`. */
  function bindTokenForm(saved) {
    function saveToken(event) {
      if (event) event.preventDefault();
      const value = $('token').value.trim();
      try {
        if (value) sessionStorage.setItem(TOKEN_KEY, value);
        else sessionStorage.removeItem(TOKEN_KEY);
      } catch (_err) {
        showBanner('This browser keeps no session storage: the token cannot be kept.');
      }
      saved();
    }

    function clearToken() {
      $('token').value = '';
      saveToken();
    }

    $('token').value = token();
    $('token-form').addEventListener('submit', saveToken);
    $('token-clear').addEventListener('click', clearToken);
  }

  return Object.freeze({
    $, enc, el, setText, short, showBanner, note, setConnection, sleep, submitOnCtrlEnter,
    ApiFailure, token, authHeaders, fetchJson, explain, bindTokenForm,
  });
})();
