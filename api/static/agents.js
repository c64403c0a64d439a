// The standing-agents page: a tenant's agents, their ledger (live), transcript and chat,
// the tenant's inbox of pending approvals and its answered decisions, the mode with its audit, budgets and spend.
//
// Plain script, no build step, nothing loaded from elsewhere. Every string that comes
// from the API (messages, titles, ledger payloads, ids) is put in the page as text:
// through textContent, Node.append(string) or data-* attributes, never parsed as markup.
// Mutations carry the daemon's bearer token (the agent routes' security chain: bearer
// when configured, refused with token_required on a tokenless daemon). The helpers both
// pages share (el, setText, the token, the JSON requests…) are common.js's `agentrtUi`,
// served in front of this file; the token is kept under the same key on both pages.
'use strict';

(function () {
  const {
    $, enc, el, setText, short, showBanner, note, setConnection, sleep, submitOnCtrlEnter,
    ApiFailure, authHeaders, fetchJson, bindTokenForm,
  } = agentrtUi;

  const API = '/api/v1';
  const RECENT_KEY = 'agentrt.agents.recentTenants';
  const FEATURE = 'standing-agents';
  const BUDGET_KEYS = [
    'AgentDispatcher:TickMaxTokens',
    'AgentDispatcher:TickMaxToolCalls',
    'AgentDispatcher:TickMaxSeconds',
    'AgentDispatcher:TickMaxCostUsd',
    'AgentDispatcher:TickMaxTurns',
  ];
  const LEDGER_PAGE = 200;
  const CALLS_READ = 1000; // the route's largest page: spend sums every attempt read
  // The routes' path bounds: a bad tenant id is refused here rather than by a 400.
  const TENANT_RE = /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/;
  const POLL_MS = 3000; // while the live stream is down
  const SAFETY_POLL_MS = 10000; // while it is up
  const REFRESH_DEBOUNCE_MS = 150;
  const LATE_REFRESH_MS = 1000;
  const RESOLVED_SHOWN = 10;
  const TASKS_SHOWN = 20;

  const state = {
    tenant: null,
    agentId: null,
    agent: null,
    // Bumped whenever the tenant or the agent changes: stale answers and loops stop.
    generation: 0,
    // Ledger seqs start at 0; the route reads turns with seq > after (-1: all).
    lastLedgerSeq: -1,
    streamAbort: null,
    streamLive: false,
    lastEventId: null,
    refreshTimer: null,
    lateRefreshTimer: null,
  };

  // -- helpers of this page ----------------------------------------------------------------

  function str(value) {
    return value === null || value === undefined ? '' : String(value);
  }

  function formatTime(timestamp) {
    if (!timestamp) return '';
    const date = new Date(timestamp);
    if (Number.isNaN(date.getTime())) return String(timestamp);
    return date.toLocaleString([], { hour12: false });
  }

  // -- the API ------------------------------------------------------------------------------

  async function api(method, path, body) {
    return fetchJson(method, path, body, authHeaders());
  }

  const EXPLAINED = { feature_disabled: 'Standing agents are not enabled for this tenant.' };

  function explain(err) {
    if (err instanceof ApiFailure && err.code === 'token_required') {
      return 'This daemon runs without a bearer token, and agent changes need one: '
        + 'restart it with --token (or QWEN_SERVER_TOKEN) and enter the token above.';
    }
    return agentrtUi.explain(err, EXPLAINED);
  }

  function tenantPath() {
    return `${API}/tenants/${enc(state.tenant)}`;
  }

  function agentPath(agentId) {
    return `${tenantPath()}/agents/${enc(agentId || state.agentId)}`;
  }

  /** False once the tenant or the agent changed: an answer for the old one is dropped. */
  function current(generation) {
    return generation === state.generation;
  }

  // -- tenant -------------------------------------------------------------------------------

  function recentTenants() {
    try {
      const list = JSON.parse(localStorage.getItem(RECENT_KEY) || '[]');
      return Array.isArray(list) ? list.filter((item) => typeof item === 'string') : [];
    } catch (_err) {
      return [];
    }
  }

  function remember(tenant) {
    const list = [tenant, ...recentTenants().filter((item) => item !== tenant)].slice(0, 10);
    try {
      localStorage.setItem(RECENT_KEY, JSON.stringify(list));
    } catch (_err) {
      // No storage: the list is a convenience only.
    }
    renderRecent();
  }

  function renderRecent() {
    $('recent-tenants').replaceChildren(...recentTenants().map((tenant) => {
      const option = document.createElement('option');
      option.value = tenant;
      return option;
    }));
  }

  function rememberLocation() {
    const params = new URLSearchParams();
    if (state.tenant) params.set('tenant', state.tenant);
    if (state.agentId) params.set('agent', state.agentId);
    history.replaceState(null, '', '#' + params.toString());
  }

  async function openTenant(tenant, agentId) {
    stopLive();
    state.generation += 1;
    state.tenant = tenant;
    state.agentId = null;
    state.agent = null;
    $('tenant').value = tenant;
    showBanner('');
    hideAgent();
    remember(tenant);
    rememberLocation();
    setConnection('pending', `tenant ${tenant}`);
    $('budget-save').disabled = false;
    await Promise.all([loadAgents(agentId), loadBudgets(), loadQueues()]);
  }

  async function setFeature(enabled) {
    if (!state.tenant) return;
    $('feature-enable').disabled = true;
    $('feature-disable').disabled = true;
    setText('feature-state', enabled ? 'Enabling…' : 'Disabling…');
    try {
      await api('PUT', `${tenantPath()}/features/${FEATURE}`, { enabled });
    } catch (err) {
      setText('feature-state', 'Could not change the feature: ' + explain(err));
      $('feature-enable').disabled = false;
      $('feature-disable').disabled = false;
      return;
    }
    if (!enabled) {
      stopLive();
      state.generation += 1;
      state.agentId = null;
      hideAgent();
    }
    await loadAgents(null);
    await loadQueues();
  }

  function featureState(enabled, text) {
    setText('feature-state', text);
    $('feature-enable').disabled = enabled;
    $('feature-disable').disabled = !enabled;
    $('agent-create').disabled = !enabled;
  }

  // -- agents -------------------------------------------------------------------------------

  async function loadAgents(preferred) {
    const generation = state.generation;
    let body;
    try {
      body = await api('GET', `${tenantPath()}/agents`);
    } catch (err) {
      if (!current(generation)) return;
      $('agents').replaceChildren();
      $('agents-empty').hidden = false;
      if (err instanceof ApiFailure && err.code === 'feature_disabled') {
        featureState(false, `Standing agents are off for tenant ${state.tenant}.`);
        setText('agents-empty', 'Enable standing agents to see them.');
      } else {
        featureState(false, '');
        setText('agents-empty', 'Could not list the agents: ' + explain(err));
        $('feature-enable').disabled = false;
      }
      return;
    }
    if (!current(generation)) return;
    const agents = Array.isArray(body && body.agents) ? body.agents : [];
    featureState(true, `Standing agents are on for tenant ${state.tenant}.`);
    $('agents').replaceChildren(...agents.map(agentItem));
    $('agents-empty').hidden = agents.length > 0;
    setText('agents-empty', 'No agent yet.');
    if (!state.agentId && agents.length) {
      const wanted = agents.find((agent) => agent.instanceId === preferred)
        || agents.find((agent) => agent.agentType === 'Soa') || agents[0];
      selectAgent(String(wanted.instanceId));
    } else {
      markCurrentAgent();
    }
  }

  function agentItem(agent) {
    const id = str(agent.instanceId);
    const status = el('span', 'status', str(agent.status));
    status.dataset.status = str(agent.status);
    const item = el('li', null,
      el('div', null, el('strong', null, str(agent.agentType)), ' · ', status),
      el('div', 'sub mono', id),
      el('div', 'sub', 'mode ' + str(agent.activeMode)));
    item.dataset.instanceId = id;
    item.dataset.testid = 'agent-item';
    item.tabIndex = 0;
    item.addEventListener('click', () => selectAgent(id));
    item.addEventListener('keydown', (event) => {
      if (event.key === 'Enter') selectAgent(id);
    });
    return item;
  }

  function markCurrentAgent() {
    for (const item of $('agents').children) {
      item.classList.toggle('current', item.dataset.instanceId === state.agentId);
    }
  }

  async function createAgent() {
    const agentType = $('new-agent-type').value;
    $('agent-create').disabled = true;
    try {
      const created = await api('POST', `${tenantPath()}/agents`, { agentType });
      await loadAgents(null);
      if (created && created.instanceId) selectAgent(String(created.instanceId));
    } catch (err) {
      showBanner('Could not create the agent: ' + explain(err));
    } finally {
      $('agent-create').disabled = false;
    }
  }

  function hideAgent() {
    for (const id of ['agent-panel', 'chat-panel', 'ledger-panel', 'mode-panel']) $(id).hidden = true;
    $('transcript').replaceChildren();
    $('ledger').replaceChildren();
    $('mode-changes').replaceChildren();
    $('mode-select').dataset.filled = '';
    state.lastLedgerSeq = -1;
  }

  function selectAgent(agentId) {
    stopLive();
    state.generation += 1;
    state.agentId = agentId;
    state.agent = null;
    hideAgent();
    for (const id of ['agent-panel', 'chat-panel', 'ledger-panel', 'mode-panel']) $(id).hidden = false;
    ['agent-message', 'chat-message', 'mode-message'].forEach((id) => note(id, ''));
    $('transcript-empty').hidden = false;
    $('ledger-empty').hidden = false;
    markCurrentAgent();
    rememberLocation();
    refreshAgent(state.generation);
    follow(state.generation);
  }

  function refreshAgent(generation) {
    return Promise.all([
      loadAgent(generation), loadMessages(generation), loadLedger(generation),
      loadModeChanges(generation), loadSpend(generation),
    ]);
  }

  async function loadAgent(generation) {
    let agent;
    try {
      agent = await api('GET', agentPath());
    } catch (err) {
      if (current(generation)) note('agent-message', 'Could not read the agent: ' + explain(err), 'error');
      return;
    }
    if (!current(generation)) return;
    state.agent = agent;
    setText('agent-id', agent.instanceId);
    setText('agent-type', agent.agentType);
    setText('agent-status', agent.status);
    $('agent-status').dataset.status = str(agent.status);
    setText('agent-mode', agent.activeMode);
    setText('agent-foundational', agent.foundational
      ? `yes, until ${formatTime(agent.worksetDeadline)}` : 'no');
    setText('agent-counters', `${str(agent.consecutiveIdleTicks)} idle ticks · ${str(agent.consecutiveBlockedTurns)} blocked turns`);
    setText('agent-next', agent.nextTickAt ? formatTime(agent.nextTickAt) : '—');
    setText('agent-workflow', agent.workflowId);
    $('agent-start').disabled = agent.status === 'Active';
    $('agent-stop').disabled = agent.status !== 'Active';
    fillModes(str(agent.agentType), str(agent.activeMode));
    // The list shows status and mode too: keep it in step with what was just read.
    const item = [...$('agents').children].find((li) => li.dataset.instanceId === state.agentId);
    if (item) item.replaceWith(agentItem(agent));
    markCurrentAgent();
  }

  async function control(action) {
    const generation = state.generation;
    note('agent-message', `${action}…`);
    try {
      await api('POST', `${agentPath()}/${action}`, {});
    } catch (err) {
      if (current(generation)) note('agent-message', `${action} refused: ${explain(err)}`, 'error');
      return;
    }
    if (!current(generation)) return;
    note('agent-message', `${action}: done.`);
    if (action === 'reset') {
      // The routes show the current generation only: the ledger starts over.
      $('ledger').replaceChildren();
      state.lastLedgerSeq = -1;
    }
    await refreshAgent(generation);
  }

  // -- transcript and chat ------------------------------------------------------------------

  async function loadMessages(generation) {
    let body;
    try {
      body = await api('GET', `${agentPath()}/messages`);
    } catch (err) {
      if (current(generation)) note('chat-message', 'Could not read the transcript: ' + explain(err), 'error');
      return;
    }
    if (!current(generation)) return;
    const messages = Array.isArray(body && body.messages) ? body.messages : [];
    const list = $('transcript');
    const following = list.scrollHeight - list.scrollTop - list.clientHeight < 40;
    list.replaceChildren(...messages.map(messageItem));
    $('transcript-empty').hidden = messages.length > 0;
    if (following) list.scrollTop = list.scrollHeight;
  }

  function messageItem(message) {
    const direction = str(message.direction);
    const who = direction === 'operator' ? 'operator' : 'agent';
    const item = el('li', null,
      el('span', 'who', `${who} · ${formatTime(message.createdAt)}`),
      el('span', 'text', str(message.text)));
    item.dataset.direction = direction;
    item.dataset.messageId = str(message.messageId);
    item.dataset.testid = 'message';
    return item;
  }

  async function sendMessage(event) {
    event.preventDefault();
    const text = $('chat-text').value;
    if (!text.trim() || !state.agentId) return;
    const generation = state.generation;
    $('chat-send').disabled = true;
    note('chat-message', 'Sending…');
    try {
      const sent = await api('POST', `${agentPath()}/messages`, { text });
      if (!current(generation)) return;
      $('chat-text').value = '';
      note('chat-message', `Queued (${str(sent && sent.messageId)}); the agent answers at its next tick.`);
      await loadMessages(generation);
    } catch (err) {
      if (current(generation)) note('chat-message', 'Not sent: ' + explain(err), 'error');
    } finally {
      $('chat-send').disabled = false;
    }
  }

  // -- ledger -------------------------------------------------------------------------------

  async function loadLedger(generation) {
    // Pages of turns after the last one shown, until a short page: the ledger only grows.
    for (;;) {
      let body;
      try {
        body = await api('GET', `${agentPath()}/ledger?after=${state.lastLedgerSeq}&limit=${LEDGER_PAGE}`);
      } catch (err) {
        if (current(generation)) note('agent-message', 'Could not read the ledger: ' + explain(err), 'error');
        return;
      }
      if (!current(generation)) return;
      const turns = Array.isArray(body && body.turns) ? body.turns : [];
      const list = $('ledger');
      for (const turn of turns) {
        const seq = Number(turn.seq) || 0;
        if (seq <= state.lastLedgerSeq) continue;
        state.lastLedgerSeq = seq;
        list.prepend(turnItem(turn)); // newest first
      }
      $('ledger-empty').hidden = list.children.length > 0;
      if (turns.length < LEDGER_PAGE) return;
    }
  }

  function turnItem(turn) {
    const decision = turn.decision && typeof turn.decision === 'object' ? turn.decision : {};
    const head = el('div', 'head',
      el('span', 'seq', '#' + str(turn.seq)),
      el('span', 'time', formatTime(turn.createdAt)),
      el('span', 'kind', str(turn.eventKind)),
      el('span', 'chip', str(turn.decisionKind)));
    if (decision.activeMode) head.append(el('span', 'chip', 'mode ' + str(decision.activeMode)));
    if (turn.servedModel) head.append(el('span', 'chip', str(turn.servedModel)));
    if (turn.costUsd !== null && turn.costUsd !== undefined) {
      head.append(el('span', 'chip', '$' + Number(turn.costUsd).toFixed(4)));
    }
    const item = el('li', null, head);
    if (decision.reasoningSummary) item.append(el('div', 'body', str(decision.reasoningSummary)));
    const actions = Array.isArray(decision.actions) ? decision.actions : [];
    if (actions.length) {
      item.append(el('div', 'body', ...actions.map((action, index) => {
        const name = action && typeof action === 'object' ? (action.tool || action.name || '?') : action;
        const outcome = action && action.outcome ? ` → ${action.outcome}` : '';
        const blocked = action && action.blockedReason ? ` (${action.blockedReason})` : '';
        return el('span', null, index ? ', ' : '', el('code', null, str(name)), outcome + blocked);
      })));
    }
    if (decision.waitCondition) item.append(el('div', 'body hint', 'waits for: ' + short(decision.waitCondition, 200)));
    item.append(el('details', 'raw', el('summary', null, `turn · hash ${str(turn.hash).slice(0, 12)}`),
      el('pre', null, JSON.stringify(turn, null, 2))));
    item.dataset.seq = str(turn.seq);
    item.dataset.eventKind = str(turn.eventKind);
    item.dataset.decisionKind = str(turn.decisionKind);
    item.dataset.testid = 'turn';
    return item;
  }

  // -- spend --------------------------------------------------------------------------------

  function number(...values) {
    for (const value of values) {
      const parsed = Number(value);
      if (value !== null && value !== undefined && Number.isFinite(parsed)) return parsed;
    }
    return 0;
  }

  async function loadSpend(generation) {
    let body;
    try {
      body = await api('GET', `${agentPath()}/llm-calls?limit=${CALLS_READ}`);
    } catch (err) {
      if (current(generation)) setText('spend', 'unavailable: ' + explain(err));
      return;
    }
    if (!current(generation)) return;
    const calls = Array.isArray(body && body.calls) ? body.calls : [];
    // One row per attempt, failed ones included: every attempt that was paid counts.
    let cost = 0;
    let tokensIn = 0;
    let tokensOut = 0;
    let failed = 0;
    for (const call of calls) {
      cost += number(call.costUsd, call.cost);
      tokensIn += number(call.tokensIn, call.inputTokens);
      tokensOut += number(call.tokensOut, call.outputTokens);
      if (call.outcome && !/^(ok|success|succeeded|completed)$/i.test(String(call.outcome))) failed += 1;
    }
    const spend = $('spend');
    spend.textContent = `$${cost.toFixed(4)} over ${calls.length} model call${calls.length === 1 ? '' : 's'}`
      + (failed ? ` (${failed} failed)` : '') + ` · ${tokensIn} tokens in, ${tokensOut} out`;
    spend.dataset.calls = String(calls.length);
    spend.dataset.costUsd = String(cost);
  }

  // -- decisions and coding tasks -------------------------------------------------------------

  function loadQueues() {
    return Promise.all([loadInbox(), loadDecisions(), loadTasks(), loadWebhooks(), loadSchedules()]);
  }

  /** The tenant's coding tasks: state, holder, title (the latest first). */
  async function loadTasks() {
    if (!state.tenant) return;
    const tenant = state.tenant;
    let body;
    try {
      body = await api('GET', `${tenantPath()}/coding-tasks`);
    } catch (err) {
      if (tenant !== state.tenant) return;
      $('tasks').replaceChildren();
      $('tasks-empty').hidden = false;
      setText('tasks-empty', err instanceof ApiFailure && err.code === 'feature_disabled'
        ? 'None (standing agents are off).' : 'Could not read the coding tasks: ' + explain(err));
      return;
    }
    if (tenant !== state.tenant) return;
    const list = (Array.isArray(body && body.tasks) ? body.tasks : []).slice(-TASKS_SHOWN).reverse();
    const items = list.map((task) => {
      const item = el('li', null, el('div', 'head',
        el('span', 'chip', str(task.state)),
        el('strong', 'title', str(task.title))));
      item.dataset.testid = 'task';
      item.dataset.taskId = str(task.taskId);
      item.dataset.state = str(task.state);
      const holder = task.holder ? 'held by ' + str(task.holder) : 'not held';
      const by = 'proposed by ' + str(task.proposedBy);
      item.append(el('div', 'hint', [holder, by].join(' · ')));
      if (task.summary) item.append(el('div', 'body', str(task.summary)));
      return item;
    });
    $('tasks').replaceChildren(...items);
    $('tasks-empty').hidden = items.length > 0;
    setText('tasks-empty', 'None.');
    const open = list.filter((task) => ['open', 'claimed', 'running'].includes(task.state)).length;
    setText('tasks-title', `Coding tasks (${open} not settled)`);
  }

  /** The tenant's signed webhooks: which agent, which event kind, the URL, last delivery. */
  async function loadWebhooks() {
    if (!state.tenant) return;
    const tenant = state.tenant;
    let body;
    try {
      body = await api('GET', `${tenantPath()}/webhooks`);
    } catch (err) {
      if (tenant !== state.tenant) return;
      $('webhooks').replaceChildren();
      $('webhooks-empty').hidden = false;
      setText('webhooks-empty', err instanceof ApiFailure && err.code === 'feature_disabled'
        ? 'None (standing agents are off).' : 'Could not read the webhooks: ' + explain(err));
      return;
    }
    if (tenant !== state.tenant) return;
    const list = Array.isArray(body && body.webhooks) ? body.webhooks : [];
    const items = list.map((hook) => {
      const item = el('li', null, el('div', 'head',
        el('span', 'chip', str(hook.kind)),
        el('strong', 'title', str(hook.instanceId))));
      item.dataset.testid = 'webhook';
      item.dataset.webhookId = str(hook.webhookId);
      const last = hook.lastDeliveryAt ? 'last delivery ' + str(hook.lastDeliveryAt) : 'no delivery yet';
      item.append(el('div', 'hint', [str(hook.url), last].join(' · ')));
      return item;
    });
    $('webhooks').replaceChildren(...items);
    $('webhooks-empty').hidden = items.length > 0;
    setText('webhooks-empty', 'None.');
    setText('webhooks-title', `Webhooks (${list.length})`);
  }

  /** The tenant's cron schedules: which agent, the cron in its time zone, the policy,
   *  the next firing Temporal will make and the last one. */
  async function loadSchedules() {
    if (!state.tenant) return;
    const tenant = state.tenant;
    let body;
    try {
      body = await api('GET', `${tenantPath()}/schedules`);
    } catch (err) {
      if (tenant !== state.tenant) return;
      $('schedules').replaceChildren();
      $('schedules-empty').hidden = false;
      setText('schedules-empty', err instanceof ApiFailure && err.code === 'feature_disabled'
        ? 'None (standing agents are off).' : 'Could not read the schedules: ' + explain(err));
      return;
    }
    if (tenant !== state.tenant) return;
    const list = Array.isArray(body && body.schedules) ? body.schedules : [];
    const items = list.map((schedule) => {
      const item = el('li', null, el('div', 'head',
        el('span', 'chip', str(schedule.cron) + ' ' + str(schedule.timeZone)),
        el('strong', 'title', str(schedule.instanceId))));
      item.dataset.testid = 'schedule';
      item.dataset.scheduleId = str(schedule.scheduleId);
      const next = Array.isArray(schedule.nextFireTimes) && schedule.nextFireTimes.length
        ? 'next ' + str(schedule.nextFireTimes[0]) : 'next firing unknown (Temporal did not answer)';
      const last = schedule.lastFiredAt ? 'last fired ' + str(schedule.lastFiredAt) : 'not fired yet';
      const policy = `overlap ${str(schedule.overlap)}, catch-up ${str(schedule.catchupWindowSeconds)} s`;
      item.append(el('div', 'hint', [policy, next, last].join(' · ')));
      if (schedule.note) item.append(el('div', 'hint', str(schedule.note)));
      return item;
    });
    $('schedules').replaceChildren(...items);
    $('schedules-empty').hidden = items.length > 0;
    setText('schedules-empty', 'None.');
    setText('schedules-title', `Schedules (${list.length})`);
  }

  /** The decisions answered lately (the open ones wait in the inbox, above). */
  async function loadDecisions() {
    if (!state.tenant) return;
    const tenant = state.tenant;
    let resolved;
    try {
      resolved = await api('GET', `${tenantPath()}/decisions?status=resolved`);
    } catch (err) {
      if (tenant !== state.tenant) return;
      $('decisions').replaceChildren();
      $('decisions-empty').hidden = false;
      setText('decisions-empty', err instanceof ApiFailure && err.code === 'feature_disabled'
        ? 'None (standing agents are off).' : 'Could not read the decisions: ' + explain(err));
      return;
    }
    if (tenant !== state.tenant) return;
    const doneList = (Array.isArray(resolved && resolved.decisions) ? resolved.decisions : [])
      .slice(-RESOLVED_SHOWN).reverse();
    const list = $('decisions');
    const shown = new Map([...list.children].map((li) => [li.dataset.decisionId, li]));
    const items = doneList.map((decision) => shown.get(str(decision.decisionId)) || decisionItem(decision));
    list.replaceChildren(...items);
    $('decisions-empty').hidden = items.length > 0;
    setText('decisions-empty', 'None.');
  }

  function decisionItem(decision) {
    const head = el('div', 'head',
      el('span', 'chip', str(decision.kind)),
      el('strong', 'title', str(decision.title)));
    const item = el('li', null, head);
    item.dataset.decisionId = str(decision.decisionId);
    item.dataset.status = str(decision.status);
    item.dataset.kind = str(decision.kind);
    item.dataset.testid = 'decision';
    if (decision.body) item.append(el('div', 'body', str(decision.body)));
    const by = [str(decision.answeredBy), str(decision.respondedBy)].filter(Boolean).join(' · ');
    const answer = el('div', 'hint resolution',
      `${str(decision.status)}: ${str(decision.resolution)}` + (by ? ` (${by})` : ''));
    answer.dataset.testid = 'decision-resolution';
    item.append(answer);
    return item;
  }

  // -- the inbox ------------------------------------------------------------------------------

  /** The tenant's pending approvals (decisions, MCP calls, coders' questions), oldest first:
   *  answered here through the approvals' inbox, which records the token that answered. */
  // Reads of the inbox overlap (a poll, a chat's refresh, an answer's): only the newest
  // answer is shown. An older one shown last would drop an item that came in between and
  // bring it back empty on the next read, losing what the operator had typed in it.
  let inboxReads = 0;
  let inboxShown = 0;

  async function loadInbox() {
    if (!state.tenant) return;
    const tenant = state.tenant;
    const read = ++inboxReads;
    let body;
    try {
      body = await api('GET', `${tenantPath()}/approvals?limit=200`);
    } catch (err) {
      if (tenant !== state.tenant || read < inboxShown) return;
      inboxShown = read;
      $('approvals').replaceChildren();
      $('approvals-empty').hidden = false;
      setText('approvals-empty', 'Could not read the inbox: ' + explain(err));
      return;
    }
    if (tenant !== state.tenant || read < inboxShown) return;
    inboxShown = read;
    const pending = Array.isArray(body && body.approvals) ? body.approvals : [];
    const list = $('approvals');
    // Keep what the operator is typing: items already shown stay in place.
    const shown = new Map([...list.children].map((li) => [li.dataset.approvalId, li]));
    const items = pending.map((approval) => shown.get(str(approval.approvalId)) || approvalItem(approval));
    list.replaceChildren(...items);
    $('approvals-empty').hidden = items.length > 0;
    setText('approvals-empty', 'Nothing waits for an answer.');
    setText('approvals-title', `Inbox (${pending.length} pending)`);
  }

  function approvalItem(approval) {
    const detail = approval.detail && typeof approval.detail === 'object' ? approval.detail : {};
    const item = el('li', null, el('div', 'head',
      el('span', 'chip', str(approval.kind)),
      el('strong', 'title', str(approval.title))));
    item.dataset.approvalId = str(approval.approvalId);
    item.dataset.kind = str(approval.kind);
    item.dataset.decisionKind = str(detail.decisionKind);
    item.dataset.testid = 'approval';
    if (detail.body) item.append(el('div', 'body', str(detail.body)));
    if (detail.call && typeof detail.call === 'object') {
      // What exactly runs if approved, and its digest: the answer carries the digest, and
      // the call is refused if its arguments no longer hash to it.
      item.append(el('pre', 'call', short(JSON.stringify(detail.call, null, 2), 2000)));
    }
    if (approval.digest) item.append(el('div', 'hint mono', 'digest ' + str(approval.digest)));
    const meta = ['asked by ' + str(approval.askedBy), 'at ' + formatTime(approval.createdAt),
      approval.expiresAt ? 'expires ' + formatTime(approval.expiresAt) : 'no timeout'];
    item.append(el('div', 'hint', meta.join(' · ')));
    if (Array.isArray(detail.options) && detail.options.length) {
      item.append(el('div', 'hint', 'options: ' + detail.options.map(str).join(', ')));
    }
    if (detail.decisionKind === 'mode_change') {
      item.append(el('div', 'hint', 'Approve applies the mode (source "approval") before the agent resumes.'));
    }
    const text = el('input', null);
    text.placeholder = 'answer or note';
    text.maxLength = 2000;
    text.dataset.testid = 'approval-text';
    const options = Array.isArray(detail.options) ? detail.options.map(str).filter(Boolean) : [];
    const yesOrNo = options.every((option) => option === 'approve' || option === 'reject');
    const buttons = [];
    if (yesOrNo) {
      // A decision's no is `reject` (its own vocabulary, spec §2.4).
      const approve = button('Approve', 'approve', 'approval-approve');
      const deny = button('Deny', 'deny', 'approval-deny');
      approve.addEventListener('click', () => answerApproval(approval, 'approve', text.value, buttons));
      deny.addEventListener('click', () => answerApproval(approval, 'reject', text.value, buttons));
      buttons.push(approve, deny);
    } else {
      // A question with options of its own (agentrt's coder's permission: proceed_once,
      // cancel, ...): one button each, the option as the answer.
      for (const option of options) {
        const choose = button(option, null, 'approval-option');
        choose.dataset.option = option;
        choose.addEventListener('click', () => answerApproval(approval, option, text.value, buttons));
        buttons.push(choose);
      }
    }
    const answer = button('Answer', null, 'approval-answer');
    answer.addEventListener('click', () => {
      if (!text.value.trim()) {
        note('approval-message', 'Write the answer first.', 'error');
        return;
      }
      answerApproval(approval, text.value.trim(), '', buttons);
    });
    buttons.push(answer);
    item.append(el('div', 'answer', text, ...buttons));
    return item;
  }

  async function answerApproval(approval, answer, text, buttons) {
    buttons.forEach((node) => { node.disabled = true; });
    note('approval-message', 'Answering…');
    try {
      const body = { answer };
      if (text) body.note = text;
      if (approval.digest) body.digest = approval.digest;
      await api('POST', `${tenantPath()}/approvals/${enc(str(approval.approvalId))}/answer`, body);
      note('approval-message', `Answered "${short(answer, 80)}" to "${short(str(approval.title), 80)}".`);
    } catch (err) {
      note('approval-message', 'Answer refused: ' + explain(err), 'error');
      buttons.forEach((node) => { node.disabled = false; });
    }
    await loadQueues();
    if (state.agentId) await refreshAgent(state.generation);
  }

  function button(label, className, testId) {
    const node = el('button', className, label);
    node.type = 'button';
    node.dataset.testid = testId;
    return node;
  }

  /** Who changes modes: recorded with each change (its actor). */
  function operatorName() {
    return $('responded-by').value.trim() || 'operator';
  }

  // -- mode ---------------------------------------------------------------------------------

  /** The mode catalogue the server put in the page (code seed of agent_modes, per type). */
  function catalogueModes(agentType) {
    const group = [...$('mode-catalog').querySelectorAll('optgroup')]
      .find((node) => node.label === agentType);
    return group ? [...group.querySelectorAll('option')].map((option) => ({
      name: option.value, description: option.title,
    })) : [];
  }

  function fillModes(agentType, activeMode) {
    const select = $('mode-select');
    // Refreshes come often: rebuilding the list each time would undo the operator's choice.
    const filled = `${agentType}/${activeMode}`;
    if (select.dataset.filled === filled) return;
    select.dataset.filled = filled;
    const modes = catalogueModes(agentType);
    if (activeMode && !modes.some((mode) => mode.name === activeMode)) modes.unshift({ name: activeMode, description: '' });
    select.replaceChildren(...modes.map((mode) => {
      const option = document.createElement('option');
      option.value = mode.name;
      option.textContent = mode.name === activeMode ? `${mode.name} (active)` : mode.name;
      option.title = mode.description;
      return option;
    }));
    select.value = activeMode;
  }

  async function changeMode(event) {
    event.preventDefault();
    const mode = $('mode-select').value;
    const generation = state.generation;
    if (!mode || !state.agentId) return;
    note('mode-message', `Switching to ${mode}…`);
    try {
      await api('POST', `${agentPath()}/mode`, { mode, actor: operatorName() });
      if (current(generation)) note('mode-message', `Mode ${mode} applies from the next tick.`);
    } catch (err) {
      if (!current(generation)) return;
      const allowed = err instanceof ApiFailure && err.body && Array.isArray(err.body.allowed)
        ? ` (allowed: ${err.body.allowed.join(', ')})` : '';
      note('mode-message', 'Mode refused: ' + explain(err) + allowed, 'error');
    }
    await Promise.all([loadAgent(generation), loadModeChanges(generation)]);
  }

  async function loadModeChanges(generation) {
    let body;
    try {
      body = await api('GET', `${agentPath()}/mode-changes`);
    } catch (err) {
      if (current(generation)) note('mode-message', 'Could not read the mode changes: ' + explain(err), 'error');
      return;
    }
    if (!current(generation)) return;
    const changes = Array.isArray(body && body.changes) ? body.changes : [];
    $('mode-changes').replaceChildren(...changes.slice().reverse().map((change) => {
      const item = el('li', null,
        el('div', 'head', el('span', 'kind', `${str(change.from) || '—'} → ${str(change.to)}`),
          el('span', 'chip', str(change.source))),
        el('div', 'hint', [change.actor ? `by ${str(change.actor)}` : '', formatTime(change.createdAt)]
          .filter(Boolean).join(' · ')));
      item.dataset.source = str(change.source);
      item.dataset.to = str(change.to);
      item.dataset.testid = 'mode-change';
      return item;
    }));
    $('mode-changes-empty').hidden = changes.length > 0;
  }

  // -- budgets ------------------------------------------------------------------------------

  async function loadBudgets() {
    if (!state.tenant) return;
    const tenant = state.tenant;
    const rows = await Promise.all(BUDGET_KEYS.map(async (key) => {
      try {
        const body = await api('GET', `${tenantPath()}/config/${enc(key)}`);
        const value = body ? body.value : null;
        return [key, value === null || value === undefined ? 'not set' : JSON.stringify(value)];
      } catch (err) {
        // An unset key answers 404 with its code; a 404 without one means no such route.
        if (err instanceof ApiFailure && err.status === 404 && err.code) return [key, 'not set'];
        return [key, err instanceof ApiFailure ? `unavailable (${err.status || 'no answer'})` : 'unavailable'];
      }
    }));
    if (tenant !== state.tenant) return;
    $('budgets').replaceChildren(...rows.map(([key, value]) => {
      const row = el('tr', null, el('td', 'mono', key.replace('AgentDispatcher:', '')), el('td', null, value));
      row.dataset.key = key;
      return row;
    }));
  }

  async function saveBudget(event) {
    event.preventDefault();
    const key = $('budget-key').value;
    const raw = $('budget-value').value.trim();
    const value = raw === '' ? null : Number(raw);
    if (value !== null && !Number.isFinite(value)) {
      note('budget-message', 'A number, or empty to clear.', 'error');
      return;
    }
    note('budget-message', 'Saving…');
    try {
      await api('PUT', `${tenantPath()}/config/${enc(key)}`, { value });
      note('budget-message', `${key} = ${raw || 'cleared'}; applies at the next tick.`);
    } catch (err) {
      note('budget-message', 'Refused: ' + explain(err), 'error');
    }
    await loadBudgets();
  }

  // -- live ---------------------------------------------------------------------------------

  function stopLive() {
    if (state.streamAbort) state.streamAbort.abort();
    state.streamAbort = null;
    state.streamLive = false;
    state.lastEventId = null;
    for (const name of ['refreshTimer', 'lateRefreshTimer']) {
      if (state[name]) clearTimeout(state[name]);
      state[name] = null;
    }
  }

  /** Many frames arrive together (a replay, a turn with its messages): one refresh for all,
   * and one more a second later, in case a frame came before its write was readable. */
  function scheduleRefresh(generation) {
    if (!current(generation)) return;
    const refresh = async () => {
      if (current(generation)) await Promise.all([refreshAgent(generation), loadQueues(), loadAgents(null)]);
    };
    if (!state.refreshTimer) {
      state.refreshTimer = setTimeout(() => {
        state.refreshTimer = null;
        refresh();
      }, REFRESH_DEBOUNCE_MS);
    }
    if (!state.lateRefreshTimer) {
      state.lateRefreshTimer = setTimeout(() => {
        state.lateRefreshTimer = null;
        refresh();
      }, LATE_REFRESH_MS);
    }
  }

  /** The agent's SSE stream, and polling beside it: often while the stream is down, now
   * and then while it is up (a frame missed for whatever reason is caught up). */
  function follow(generation) {
    followStream(generation);
    poll(generation);
  }

  async function poll(generation) {
    while (current(generation)) {
      await sleep(state.streamLive ? SAFETY_POLL_MS : POLL_MS);
      if (current(generation)) await Promise.all([refreshAgent(generation), loadQueues()]);
    }
  }

  async function followStream(generation) {
    let backoff = 1000;
    while (current(generation)) {
      const outcome = await readStream(generation);
      if (!current(generation)) return;
      if (outcome === 'unsupported') {
        setConnection('ok', 'polling every ' + POLL_MS / 1000 + ' s');
        return;
      }
      setConnection('error', 'stream closed — polling, reconnecting');
      await sleep(backoff);
      backoff = Math.min(backoff * 2, 30000);
    }
  }

  /** Read `event:`/`data:`/`id:` frames (fetch, so the bearer header goes along). */
  async function readStream(generation) {
    const abort = new AbortController();
    state.streamAbort = abort;
    const headers = authHeaders({ Accept: 'text/event-stream' });
    if (state.lastEventId !== null) headers['Last-Event-ID'] = state.lastEventId;
    let response;
    try {
      response = await fetch(`${agentPath()}/stream`, { headers, signal: abort.signal, cache: 'no-store' });
    } catch (_err) {
      return 'error';
    }
    if (!response.ok || !response.body) {
      return response.status === 404 || response.status === 405 ? 'unsupported' : 'error';
    }
    state.streamLive = true;
    setConnection('ok', 'live');
    scheduleRefresh(generation); // anything that happened before the stream opened
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = '';
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done || !current(generation)) break;
        buffer += decoder.decode(value, { stream: true }).replace(/\r\n?/g, '\n');
        let cut = buffer.indexOf('\n\n');
        while (cut >= 0) {
          handleFrame(buffer.slice(0, cut), generation);
          buffer = buffer.slice(cut + 2);
          cut = buffer.indexOf('\n\n');
        }
      }
    } catch (_err) {
      // Aborted (another agent chosen) or the connection dropped: the caller decides.
    } finally {
      state.streamLive = false;
    }
    return 'closed';
  }

  function handleFrame(frame, generation) {
    let type = 'message';
    let hasData = false;
    for (const line of frame.split('\n')) {
      if (line.startsWith('id:')) state.lastEventId = line.slice(3).trim();
      else if (line.startsWith('event:')) type = line.slice(6).trim();
      else if (line.startsWith('data:')) hasData = true;
    }
    // Comments (heartbeats) and the retry line carry no data; everything else may change
    // what the page shows.
    if (hasData && type !== 'replay_complete') scheduleRefresh(generation);
  }

  // -- token --------------------------------------------------------------------------------

  /** A new (or no) token: the open tenant is read again with it. */
  function tokenSaved() {
    if (state.tenant) openTenant(state.tenant, state.agentId);
  }

  // -- start --------------------------------------------------------------------------------

  function init() {
    bindTokenForm(tokenSaved);
    $('tenant-form').addEventListener('submit', (event) => {
      event.preventDefault();
      const tenant = $('tenant').value.trim();
      if (!TENANT_RE.test(tenant)) {
        showBanner('Tenant: letters, digits, ".", "_" and "-" (up to 100), starting with a letter or digit.');
        return;
      }
      openTenant(tenant, null);
    });
    $('feature-enable').addEventListener('click', () => setFeature(true));
    $('feature-disable').addEventListener('click', () => setFeature(false));
    $('agent-create').addEventListener('click', createAgent);
    $('agent-start').addEventListener('click', () => control('start'));
    $('agent-stop').addEventListener('click', () => control('stop'));
    $('agent-reset').addEventListener('click', () => control('reset'));
    $('chat-form').addEventListener('submit', sendMessage);
    submitOnCtrlEnter('chat-text', 'chat-form');
    $('mode-form').addEventListener('submit', changeMode);
    $('budget-form').addEventListener('submit', saveBudget);
    $('budget-key').replaceChildren(...BUDGET_KEYS.map((key) => {
      const option = document.createElement('option');
      option.value = key;
      option.textContent = key.replace('AgentDispatcher:', '');
      return option;
    }));
    renderRecent();
    const params = new URLSearchParams(location.hash.slice(1));
    const tenant = params.get('tenant');
    const opening = tenant && TENANT_RE.test(tenant) ? openTenant(tenant, params.get('agent')) : Promise.resolve();
    opening.finally(() => {
      document.body.dataset.ready = 'true';
    });
  }

  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', init);
  else init();
})();
