// The agent-tools page: start a turn, follow its events, decide its research.
//
// Plain script, no build step, nothing loaded from elsewhere. Every string that
// comes from the API (prompts, payloads, summaries, ids) is put in the page as
// text: through textContent, Node.append(string) or setAttribute on data-*
// attributes, never parsed as markup. The helpers both pages share (el, setText, the
// token, the JSON requests…) are common.js's `agentrtUi`, served in front of this file.
'use strict';

(function () {
  const {
    $, enc, el, setText, short, showBanner, note, setConnection, sleep, submitOnCtrlEnter,
    ApiFailure, authHeaders, fetchJson, explain, bindTokenForm,
  } = agentrtUi;

  const API = '/api/v1';
  const WAIT_SECONDS = 10;
  const WORKSPACE_RE = /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/;
  const FINAL_TYPES = new Set(['agent.turn.completed', 'agent.error']);

  const state = {
    csrf: null,
    turn: null, // {turn_id, workspace, agent, prompt}
    cursor: 0,
    generation: 0, // bumped on each new turn: stops the previous event loop
    lastSequence: 0,
    objects: new Map(), // "kind:id" → {li, count}
    researchId: null,
  };

  function json(value) {
    return JSON.stringify(value, null, 2);
  }

  // -- the API ------------------------------------------------------------------------------

  async function request(method, path, body) {
    const headers = authHeaders();
    // The browser adds Origin itself; the CSRF token comes from GET .../session.
    if (method !== 'GET' && state.csrf) headers['X-CSRF-Token'] = state.csrf;
    return fetchJson(method, path, body, headers);
  }

  async function openSession() {
    const body = await request('GET', `${API}/agent-tools/session`);
    state.csrf = body.csrfToken;
    setConnection('ok', 'session open');
    return body;
  }

  /** One retry with a fresh session when the cookie or the CSRF token is stale. */
  async function api(method, path, body) {
    try {
      return await request(method, path, body);
    } catch (err) {
      if (err instanceof ApiFailure && (err.code === 'session_required' || err.code === 'csrf_invalid')) {
        await openSession();
        return request(method, path, body);
      }
      throw err;
    }
  }

  function query(params) {
    const search = new URLSearchParams();
    for (const [key, value] of Object.entries(params)) {
      if (value !== null && value !== undefined && value !== '') search.set(key, String(value));
    }
    const text = search.toString();
    return text ? '?' + text : '';
  }

  // -- catalog ------------------------------------------------------------------------------

  function workspaceInput() {
    const value = $('workspace').value.trim();
    if (value && !WORKSPACE_RE.test(value)) {
      throw new Error('Workspace: letters, digits, ".", "_" and "-" only (up to 100).');
    }
    return value || null;
  }

  async function loadCatalog() {
    const list = $('catalog');
    let workspace;
    try {
      workspace = workspaceInput();
    } catch (err) {
      setText('catalog-workspace', err.message);
      return;
    }
    try {
      const body = await api('GET', `${API}/agent-tools/catalog${query({ workspace })}`);
      setText('catalog-workspace', `workspace ${body.workspace} · ${body.tools.length} tools`);
      list.replaceChildren(...body.tools.map(catalogItem));
    } catch (err) {
      setText('catalog-workspace', 'Catalog unavailable: ' + explain(err));
      list.replaceChildren();
    }
  }

  function catalogItem(tool) {
    const availability = tool.availability || {};
    const available = availability.available !== false;
    const item = el('li', null);
    item.dataset.toolId = String(tool.tool_id);
    item.dataset.available = String(available);
    const head = el('div', null, el('code', null, String(tool.tool_id)));
    const tags = [tool.action_class, tool.risk_class && `${tool.risk_class} risk`].filter(Boolean);
    if (tags.length) head.append(' ', el('span', 'chip', tags.join(' · ')));
    if (!available) head.append(' ', el('span', 'chip', 'unavailable'));
    item.append(head);
    if (tool.description) item.append(el('div', 'desc', String(tool.description)));
    if (!available && availability.reason) item.append(el('div', 'desc', String(availability.reason)));
    return item;
  }

  // -- turn ---------------------------------------------------------------------------------

  function setStatus(status) {
    const node = $('turn-status');
    node.textContent = status;
    node.dataset.status = status;
  }

  function resetTurnView(turn) {
    $('turn').hidden = false;
    setText('turn-id', turn.turn_id);
    setText('turn-agent', turn.agent);
    setText('turn-workspace', turn.workspace);
    setText('turn-prompt', turn.prompt);
    setText('turn-result', '');
    setStatus(turn.status || 'running');
    $('events').replaceChildren();
    $('events-empty').hidden = true;
    $('objects').replaceChildren();
    $('objects-empty').hidden = false;
    state.objects.clear();
    hideAuthorization();
  }

  async function startTurn(event) {
    event.preventDefault();
    const prompt = $('prompt').value;
    if (!prompt.trim()) {
      showBanner('Write a prompt first.');
      return;
    }
    let workspace;
    try {
      workspace = workspaceInput();
    } catch (err) {
      showBanner(err.message);
      return;
    }
    const agent = $('agent').value;
    const start = $('start');
    start.disabled = true;
    showBanner('');
    try {
      const body = { prompt, agent };
      if (workspace) body.workspace = workspace;
      const created = await api('POST', `${API}/agent-tools/turns`, body);
      state.generation += 1;
      state.turn = { turn_id: created.turn_id, workspace: created.workspace, agent, prompt };
      state.cursor = Number(created.events_cursor) || 0;
      state.lastSequence = state.cursor;
      resetTurnView({ ...state.turn, status: created.status });
      rememberTurn(state.turn);
      pollEvents(state.generation);
    } catch (err) {
      showBanner('Could not start the turn: ' + explain(err));
    } finally {
      start.disabled = false;
    }
  }

  /** The turn goes in the URL fragment, so a reload (or a shared link) reopens it. */
  function rememberTurn(turn) {
    const fragment = new URLSearchParams({ turn: turn.turn_id, workspace: turn.workspace });
    history.replaceState(null, '', '#' + fragment.toString());
  }

  /** Reopen the turn named in the URL fragment: its state, then its events from the start. */
  async function restoreTurn() {
    const params = new URLSearchParams(location.hash.slice(1));
    const turnId = params.get('turn');
    if (!turnId) return;
    const workspace = params.get('workspace');
    try {
      const body = await api('GET', `${API}/agent-tools/turns/${enc(turnId)}${query({ workspace })}`);
      state.generation += 1;
      state.turn = { turn_id: body.turn_id, workspace: body.workspace, agent: body.agent, prompt: '' };
      state.cursor = 0;
      state.lastSequence = 0;
      resetTurnView({ ...state.turn, status: body.status });
      pollEvents(state.generation);
    } catch (err) {
      showBanner(`Could not reopen turn ${turnId}: ${explain(err)}`);
    }
  }

  async function refreshTurn() {
    const turn = state.turn;
    if (!turn) return;
    try {
      const body = await api(
        'GET', `${API}/agent-tools/turns/${enc(turn.turn_id)}${query({ workspace: turn.workspace })}`);
      if (state.turn !== turn) return;
      setStatus(body.status);
      if (body.summary) setText('turn-result', body.summary);
      if (body.status === 'awaiting_authorization' && body.research_id) showAuthorization(body.research_id);
    } catch (err) {
      showBanner('Could not read the turn: ' + explain(err));
    }
  }

  // -- events -------------------------------------------------------------------------------

  async function pollEvents(generation) {
    let backoff = 500;
    while (generation === state.generation) {
      const turn = state.turn;
      let page;
      try {
        page = await api('GET', `${API}/agent-tools/events${query({
          cursor: state.cursor, wait: WAIT_SECONDS, workspace: turn.workspace,
        })}`);
        backoff = 500;
        setConnection('ok', 'following events');
      } catch (err) {
        if (generation !== state.generation) return;
        setConnection('error', 'events: ' + explain(err) + ' — retrying');
        await sleep(backoff);
        backoff = Math.min(backoff * 2, 10000);
        continue;
      }
      if (generation !== state.generation) return;
      if (page.cursor_expired) {
        showBanner('Some events of this turn left the journal before they were shown; the turn state is read instead.');
        await refreshTurn();
      }
      let final = false;
      for (const event of page.events || []) {
        if (event.sequence <= state.lastSequence) continue;
        state.lastSequence = event.sequence;
        if (event.turn_id !== turn.turn_id) continue;
        handleEvent(event);
        if (FINAL_TYPES.has(event.type)) final = true;
      }
      state.cursor = Math.max(state.cursor, Number(page.cursor) || 0);
      if (final) {
        setConnection('ok', 'turn finished');
        return;
      }
    }
  }

  function handleEvent(event) {
    renderEvent(event);
    trackObjects(event);
    const payload = event.payload || {};
    switch (event.type) {
      case 'agent.turn.started':
        setStatus('running');
        if (!$('turn-prompt').textContent) setText('turn-prompt', payload.prompt);
        break;
      case 'agent.authorization.required':
        setStatus('awaiting_authorization');
        if (payload.research_id) showAuthorization(String(payload.research_id));
        break;
      case 'agent.turn.completed':
        setStatus(String(payload.status || 'completed'));
        setText('turn-result', [payload.result, payload.summary].filter(Boolean).join(' — '));
        finishAuthorization();
        break;
      case 'agent.error':
        setStatus('failed');
        setText('turn-result', payload.message || 'the turn failed');
        break;
      default:
        break;
    }
  }

  function formatTime(timestamp) {
    const date = new Date(timestamp);
    if (Number.isNaN(date.getTime())) return String(timestamp || '');
    return date.toLocaleTimeString([], { hour12: false }) + '.' + String(date.getMilliseconds()).padStart(3, '0');
  }

  /** One readable line per event type; the full payload sits in a <details> below. */
  function describe(event) {
    const p = event.payload || {};
    switch (event.type) {
      case 'agent.turn.started':
        return [`agent ${p.agent || '?'} · prompt: `, el('span', 'event-prompt', String(p.prompt || ''))];
      case 'agent.plan.updated':
        return [`plan (${p.agent || '?'}): ${(p.steps || []).join(' → ')}`];
      case 'agent.tool.requested':
        return [el('code', null, String(p.tool_id || '?')), ' ', short(p.input || {}, 200)];
      case 'agent.tool.started':
        return [el('code', null, String(p.tool_id || '?')), ' started'];
      case 'agent.tool.completed': {
        const parts = [el('code', null, String(p.tool_id || '?')), ` → ${p.status || '?'}`];
        if (p.diagnostic) parts.push(` · ${short(p.diagnostic, 200)}`);
        return parts;
      }
      case 'agent.authorization.required':
        return ['research ', el('code', null, String(p.research_id || '?')), ' needs a human decision'];
      case 'agent.turn.completed':
        return [`${p.result || p.status || 'done'}`, p.summary ? ` — ${p.summary}` : ''];
      case 'agent.error':
        return [String(p.message || 'error')];
      default:
        return [short(p, 200)];
    }
  }

  function renderEvent(event) {
    const item = el('li', null);
    item.dataset.type = String(event.type);
    item.dataset.sequence = String(event.sequence);
    item.dataset.testid = 'event';
    const head = el('div', 'event-head',
      el('span', 'seq', '#' + event.sequence),
      el('span', 'time', formatTime(event.timestamp)),
      el('span', 'type', String(event.type)));
    if (event.call_id) head.append(el('span', 'chip mono', 'call ' + short(String(event.call_id), 13)));
    item.append(head);

    const body = el('div', 'event-body', ...describe(event));
    const refs = Array.isArray(event.refs) ? event.refs : [];
    if (refs.length) {
      body.append(el('div', 'refs', ...refs.map((ref) => el('span', 'chip', `${ref.kind}:${ref.id}`))));
    }
    const raw = el('details', 'raw', el('summary', null, 'payload'), el('pre', null, json(event.payload || {})));
    const resultId = event.payload && event.payload.result_id;
    if (resultId) raw.append(resultButton(String(resultId)));
    body.append(raw);
    item.append(body);
    const list = $('events');
    const following = list.scrollHeight - list.scrollTop - list.clientHeight < 40;
    list.append(item);
    if (following) list.scrollTop = list.scrollHeight;
  }

  function resultButton(resultId) {
    const holder = el('div', null);
    const button = el('button', null, 'Show stored result');
    button.type = 'button';
    button.dataset.resultId = resultId;
    button.addEventListener('click', async () => {
      button.disabled = true;
      const output = el('pre', null, 'loading…');
      holder.replaceChildren(output);
      try {
        const result = await api('GET', `${API}/agent-tools/results/${enc(resultId)}${query({
          workspace: state.turn && state.turn.workspace,
        })}`);
        output.textContent = json(result);
      } catch (err) {
        output.textContent = 'Could not read the result: ' + explain(err);
        holder.append(button);
        button.disabled = false;
      }
    });
    holder.append(button);
    return holder;
  }

  // -- referenced objects -------------------------------------------------------------------

  function trackObjects(event) {
    const refs = (Array.isArray(event.refs) ? event.refs : []).filter((ref) => ref && ref.kind && ref.id);
    if (!refs.length) return;
    const list = $('objects');
    for (const entry of state.objects.values()) entry.li.classList.remove('current');
    for (const ref of refs) {
      const key = `${ref.kind}:${ref.id}`;
      let entry = state.objects.get(key);
      if (!entry) {
        const li = el('li', null,
          el('span', 'chip', String(ref.kind)),
          el('span', 'mono', String(ref.id)),
          el('span', 'count', ''));
        li.dataset.kind = String(ref.kind);
        li.dataset.id = String(ref.id);
        li.dataset.testid = 'object';
        entry = { li, count: 0 };
        state.objects.set(key, entry);
        list.append(li);
      }
      entry.count += 1;
      entry.li.lastChild.textContent = `×${entry.count}`;
      entry.li.classList.add('current');
    }
    $('objects-empty').hidden = state.objects.size > 0;
    setText('objects-hint', `Highlighted: referenced by event #${event.sequence} (${event.type}).`);
  }

  // -- authorization ------------------------------------------------------------------------

  function hideAuthorization() {
    state.researchId = null;
    $('authorization').hidden = true;
    setText('auth-title', 'Authorization required');
    for (const id of ['auth-research-id', 'auth-state', 'auth-question', 'auth-scope', 'auth-rationale', 'auth-message']) {
      setText(id, '');
    }
    setDecisionEnabled(true);
  }

  function setDecisionEnabled(enabled) {
    $('approve').disabled = !enabled;
    $('deny').disabled = !enabled;
  }

  function authMessage(text, kind) {
    note('auth-message', text, kind);
  }

  async function showAuthorization(researchId) {
    if (state.researchId === researchId) return;
    state.researchId = researchId;
    $('authorization').hidden = false;
    setText('auth-research-id', researchId);
    setDecisionEnabled(true);
    authMessage('');
    await loadResearch(researchId);
  }

  async function loadResearch(researchId) {
    const workspace = state.turn && state.turn.workspace;
    try {
      const research = await api('GET', `${API}/research/${enc(researchId)}${query({ workspace })}`);
      if (state.researchId !== researchId) return research;
      setText('auth-title', research.state === 'prepared' ? 'Authorization required' : 'Authorization decided');
      setText('auth-state', research.state);
      setText('auth-question', research.question);
      const scope = research.scope || {};
      const nodes = Array.isArray(scope.node_ids) ? scope.node_ids.join(', ') : short(scope, 200);
      setText('auth-scope', `${nodes}${scope.depth ? ` (depth ${scope.depth})` : ''}`);
      setText('auth-rationale', research.rationale);
      if (research.decision) {
        setDecisionEnabled(false);
        if (!$('auth-message').textContent) {
          authMessage(`Decided: ${research.decision.decision} by ${research.decision.decided_by}.`);
        }
      }
      return research;
    } catch (err) {
      authMessage('Could not read the research: ' + explain(err), 'error');
      return null;
    }
  }

  async function decide(decision) {
    const researchId = state.researchId;
    const turn = state.turn;
    if (!researchId || !turn) return;
    const decidedBy = $('decided-by').value.trim();
    if (!decidedBy) {
      authMessage('Say who decides ("Decided by").', 'error');
      return;
    }
    setDecisionEnabled(false);
    const body = { decision, decided_by: decidedBy, workspace: turn.workspace };
    const note = $('decision-note').value.trim();
    if (note) body.note = note;
    authMessage(decision === 'approve' ? 'Approving…' : 'Denying…');
    let research;
    try {
      research = await api('POST', `${API}/research/${enc(researchId)}/decision`, body);
    } catch (err) {
      authMessage('Decision refused: ' + explain(err), 'error');
      if (err instanceof ApiFailure && err.code === 'research_already_decided') {
        await loadResearch(researchId);
      } else {
        setDecisionEnabled(true);
      }
      return;
    }
    setText('auth-state', research.state);
    const decided = `${decision === 'approve' ? 'Approved' : 'Denied'} by ${decidedBy} (research ${research.state}).`;
    authMessage(decided + ' Resuming the turn…');
    try {
      const resumed = await api('POST', `${API}/agent-tools/turns/${enc(turn.turn_id)}/resume`, {
        workspace: turn.workspace,
      });
      if (resumed.status === 'resuming') {
        authMessage(decided + ' Resume accepted; waiting for the turn to finish.');
      } else {
        authMessage(`${decided} Resume: ${resumed.result || resumed.status}${resumed.summary ? ' — ' + resumed.summary : ''}`);
      }
    } catch (err) {
      // After a denial the resume answers 409 research_denied: the turn ends DENIED.
      const kind = err instanceof ApiFailure && err.status === 409 ? 'info' : 'error';
      authMessage(`${decided} Resume answered ${explain(err)}`, kind);
    }
  }

  /** The turn is over: no decision can change it any more; show the research's final state. */
  function finishAuthorization() {
    if (!state.researchId) return;
    setDecisionEnabled(false);
    loadResearch(state.researchId);
  }

  // -- token --------------------------------------------------------------------------------

  async function reconnect() {
    showBanner('');
    try {
      await openSession();
    } catch (err) {
      setConnection('error', 'no session');
      showBanner('Could not open a session: ' + explain(err));
      return false;
    }
    await loadCatalog();
    return true;
  }

  // -- start --------------------------------------------------------------------------------

  function init() {
    bindTokenForm(reconnect);
    $('turn-form').addEventListener('submit', startTurn);
    submitOnCtrlEnter('prompt', 'turn-form');
    $('workspace').addEventListener('change', loadCatalog);
    $('approve').addEventListener('click', () => decide('approve'));
    $('deny').addEventListener('click', () => decide('deny'));
    reconnect().then((connected) => connected && restoreTurn()).finally(() => {
      document.body.dataset.ready = 'true';
    });
  }

  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', init);
  else init();
})();
