// Headless Chromium against a running agentrt (with a bearer token): /ui/agents end to end.
//
//   BASE_URL=http://127.0.0.1:4170 API_TOKEN=... node tests/browser/agents_page.mjs
//
// Types the token and a fresh tenant on the page, enables standing agents (the tenant's SOA
// starts and greets), chats with it (a message with an HTML injection attempt: the scripted
// model answers through soa_send_message and the reply must appear), makes it raise a
// decision (a `/call soa_propose_decision` line), approves the decision on the page and waits
// for the agent to resume, changes the mode, approves a mode change the agent proposes, and
// sets a budget. Checks the resolution over the API too.
// Prints one JSON line and exits 0 on success; exits 1 with a message otherwise.
// Uses the system Chromium (CHROMIUM_PATH, default /usr/bin/chromium): never downloads one.
// SCREENSHOT=file.png keeps a picture of the page at the end.

import { existsSync } from 'node:fs';
import { chromium } from 'playwright-core';

const BASE_URL = (process.env.BASE_URL || 'http://127.0.0.1:4170').replace(/\/+$/, '');
const API_TOKEN = process.env.API_TOKEN || '';
const CHROMIUM_PATH = process.env.CHROMIUM_PATH || '/usr/bin/chromium';
const STEP_TIMEOUT = Number(process.env.UI_TEST_STEP_TIMEOUT_MS || 90000);
const TENANT = `ui-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
const INJECTION = '<img src=x onerror=window.__xss=1>';
const DECISION_TITLE = `Ship the quarterly review? <img src=x onerror=window.__xss=2>`;
const TASK_TITLE = 'Tidy the README';
const NEW_MODE = 'Dialogue';

class Failure extends Error {}

const byTestId = (id) => `[data-testid="${id}"]`;

/** What the page shows, for the failure message. */
async function snapshot(page) {
  try {
    return await page.evaluate(() => {
      const read = (id) => document.querySelector(`[data-testid="${id}"]`)?.textContent ?? null;
      return {
        connection: read('connection'),
        banner: read('banner'),
        feature: read('feature-state'),
        agent: read('agent-id'),
        status: read('agent-status'),
        agentMessage: read('agent-message'),
        chatMessage: read('chat-message'),
        approvalMessage: read('approval-message'),
        mode: read('agent-mode'),
        modeMessage: read('mode-message'),
        transcript: [...document.querySelectorAll('#transcript > li')]
          .map((li) => `${li.dataset.direction}: ${li.querySelector('.text')?.textContent}`).slice(-6),
        ledger: [...document.querySelectorAll('#ledger > li')]
          .map((li) => `${li.dataset.seq} ${li.dataset.eventKind} ${li.dataset.decisionKind}`).slice(0, 8),
        decisions: [...document.querySelectorAll('#decisions > li')]
          .map((li) => `${li.dataset.decisionId} ${li.dataset.status}`),
      };
    });
  } catch (err) {
    return { unavailable: err.message };
  }
}

async function step(page, name, action) {
  try {
    return await action();
  } catch (err) {
    const state = await snapshot(page);
    throw new Failure(`step "${name}" failed: ${err.message.split('\n')[0]}\npage: ${JSON.stringify(state)}`);
  }
}

async function assertNoInjection(page, where) {
  const found = await page.evaluate(() => ({
    xss: typeof window.__xss === 'undefined' ? null : String(window.__xss),
    images: document.querySelectorAll('img').length,
  }));
  if (found.xss !== null || found.images !== 0) {
    throw new Failure(`${where}: injected markup was parsed (window.__xss=${found.xss}, <img> count ${found.images})`);
  }
}

/** The API as a client sees it (the page's own answers are checked against it). */
async function api(path) {
  const response = await fetch(BASE_URL + path, { headers: { Authorization: `Bearer ${API_TOKEN}` } });
  if (!response.ok) throw new Failure(`GET ${path} answered ${response.status}: ${await response.text()}`);
  return response.json();
}

const messages = (page) => page.evaluate(() => [...document.querySelectorAll('#transcript > li')].map((li) => ({
  id: li.dataset.messageId, direction: li.dataset.direction, text: li.querySelector('.text')?.textContent ?? '',
})));

/** Send `text` from the chat box; resolves with the agent's first message after it. */
async function chat(page, text) {
  const before = (await messages(page)).length;
  await page.locator(byTestId('chat-text')).fill(text);
  await page.locator(byTestId('chat-send')).click();
  await page.waitForFunction(
    ([count, sent]) => {
      const items = [...document.querySelectorAll('#transcript > li')].slice(count);
      const mine = items.findIndex((li) => li.dataset.direction === 'operator'
        && li.querySelector('.text')?.textContent === sent);
      return mine >= 0 && items.slice(mine + 1).some((li) => li.dataset.direction === 'agent');
    },
    [before, text],
    { timeout: STEP_TIMEOUT },
  );
  const after = (await messages(page)).slice(before);
  const mine = after.findIndex((m) => m.direction === 'operator' && m.text === text);
  return after.slice(mine + 1).find((m) => m.direction === 'agent');
}

async function run(page, problems) {
  const started = Date.now();
  const response = await step(page, 'open the page', () => page.goto(`${BASE_URL}/ui/agents`));
  if (!response || response.status() !== 200) {
    throw new Failure(`GET /ui/agents answered ${response ? response.status() : 'nothing'}`);
  }
  const csp = response.headers()['content-security-policy'] || '';
  if (!csp.includes("script-src 'self'")) throw new Failure(`no strict Content-Security-Policy: "${csp}"`);
  await step(page, 'page ready', () => page.waitForSelector('body[data-ready="true"]'));

  // 1. The token, then a fresh tenant: standing agents are off until enabled on the page.
  await step(page, 'enter the token', async () => {
    await page.locator('#token-box summary').click();
    await page.locator(byTestId('token')).fill(API_TOKEN);
    await page.locator(byTestId('token-save')).click();
  });
  await step(page, 'open the tenant', async () => {
    await page.locator(byTestId('tenant')).fill(TENANT);
    await page.locator(byTestId('tenant-open')).click();
    await page.waitForFunction(() => !document.querySelector('[data-testid="feature-enable"]')?.disabled);
  });
  const featureOff = await page.locator(byTestId('feature-state')).textContent();
  await step(page, 'enable standing agents', async () => {
    await page.locator(byTestId('feature-enable')).click();
    await page.locator(`${byTestId('agents')} > li`).first().waitFor();
    await page.waitForFunction(() => document.querySelector('[data-testid="agent-status"]')?.textContent);
  });
  const agentId = await page.locator(byTestId('agent-id')).textContent();
  const greeting = await step(page, 'wait for the greeting', async () => {
    await page.locator('#transcript > li[data-direction="agent"]').first().waitFor();
    return page.locator('#transcript > li[data-direction="agent"] .text').first().textContent();
  });

  // 2. Chat: a message typed on the page reaches the agent; its reply appears.
  const hello = `Hello from the page: what are you watching? ${INJECTION}`;
  const reply = await step(page, 'chat and wait for the reply', () => chat(page, hello));
  await assertNoInjection(page, 'after the chat');

  // 3. A decision raised by the agent, approved on the page.
  const call = `Please ask me first.\n/call soa_propose_decision ${JSON.stringify({
    title: DECISION_TITLE, body: 'Raised from the browser test.', options: ['approve', 'reject'],
  })}`;
  // One read of the inbox, sent before the decision exists, is answered only after the
  // decision is shown and an answer typed in it: reads overlap (polls, the chat's
  // refreshes), and an answer arriving out of order must not take the item and its text
  // away (it came back empty on the next read, and the note was lost).
  let holdNextRead = false;
  let releaseStaleRead = async () => {};
  let markHeld;
  const staleReadHeld = new Promise((held) => { markHeld = held; });
  const inboxRead = (url) => url.pathname.endsWith('/approvals') && url.searchParams.has('limit');
  await page.route(inboxRead, async (route) => {
    if (!holdNextRead) return route.continue();
    holdNextRead = false;
    const response = await route.fetch();
    releaseStaleRead = async () => {
      const finished = page.waitForEvent('requestfinished', {
        predicate: (request) => request === route.request(), timeout: STEP_TIMEOUT,
      });
      await route.fulfill({ response });
      await finished;
    };
    markHeld();
  });
  await step(page, 'make the agent raise a decision', async () => {
    holdNextRead = true;
    await page.locator(byTestId('chat-text')).fill(call);
    await page.locator(byTestId('chat-send')).click();
    await page.waitForFunction(
      (title) => [...document.querySelectorAll('#approvals > li[data-kind="decision"]')]
        .some((li) => li.querySelector('.title')?.textContent === title),
      DECISION_TITLE,
      { timeout: STEP_TIMEOUT },
    );
  });
  // The inbox lists it as approval `decision:<decisionId>`.
  const approvalId = await page.evaluate((title) => [...document.querySelectorAll('#approvals > li[data-kind="decision"]')]
    .find((li) => li.querySelector('.title')?.textContent === title).dataset.approvalId, DECISION_TITLE);
  const decisionId = approvalId.slice('decision:'.length);
  await assertNoInjection(page, 'with the decision shown');
  const item = `#approvals > li[data-approval-id="${approvalId}"]`;
  await step(page, 'approve the decision in the inbox', async () => {
    await page.locator(`${item} ${byTestId('approval-text')}`).fill('Go ahead.');
    await staleReadHeld;
    await releaseStaleRead();
    await page.unroute(inboxRead);
    // The page has handled the late answer (its handler runs before the next evaluate).
    await page.evaluate(() => new Promise((done) => setTimeout(done, 0)));
    await page.locator(`${item} ${byTestId('approval-approve')}`).click();
    await page.locator(item).waitFor({ state: 'detached', timeout: STEP_TIMEOUT });
    await page.locator(`#decisions > li[data-decision-id="${decisionId}"][data-status="resolved"]`)
      .waitFor({ timeout: STEP_TIMEOUT });
  });
  const resolved = (await api(`/api/v1/tenants/${encodeURIComponent(TENANT)}/decisions?status=resolved`))
    .decisions.find((decision) => decision.decisionId === decisionId);
  if (!resolved || resolved.resolution !== 'approve' || resolved.answeredBy !== 'admin'
      || resolved.resolutionNotes !== 'Go ahead.') {
    throw new Failure(`the API does not show decision ${decisionId} approved: ${JSON.stringify(resolved)}`);
  }
  await step(page, 'wait for the agent to resume with the answer', () => page.locator(
    '#ledger > li[data-event-kind="OperatorAnsweredEscalation"]').first().waitFor({ timeout: STEP_TIMEOUT }));

  // 3b. A coding task the agent proposes shows in the tasks panel, held by agentrt's coder.
  const task = `/call soa_propose_task ${JSON.stringify({ title: TASK_TITLE, prompt: 'Say hello.' })}`;
  await step(page, 'show a proposed coding task', async () => {
    await page.locator(byTestId('chat-text')).fill(task);
    await page.locator(byTestId('chat-send')).click();
    await page.waitForFunction(
      // Running, or already settled (the scripted coder is quick): held by agentrt's coder.
      (title) => [...document.querySelectorAll('#tasks > li')]
        .some((li) => li.querySelector('.title')?.textContent === title
          && li.textContent.includes('held by agentrt-coder')),
      TASK_TITLE,
      { timeout: STEP_TIMEOUT },
    );
  });

  // 3c. A signed webhook made for the agent (issue 21, item 11) is listed on the page.
  await step(page, 'list a webhook', async () => {
    const path = `/api/v1/tenants/${encodeURIComponent(TENANT)}/agents/${encodeURIComponent(agentId)}/webhooks`;
    const response = await fetch(BASE_URL + path, {
      method: 'POST',
      headers: { Authorization: `Bearer ${API_TOKEN}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ kind: 'MissionStateChanged' }),
    });
    if (response.status !== 201) throw new Failure(`POST ${path} answered ${response.status}: ${await response.text()}`);
    const hook = await response.json();
    await page.locator(`#webhooks > li[data-webhook-id="${hook.webhookId}"]`).waitFor({ timeout: STEP_TIMEOUT });
    const shown = await page.locator(`#webhooks > li[data-webhook-id="${hook.webhookId}"]`).textContent();
    if (shown.includes(hook.secret)) throw new Failure('the page shows a webhook secret');
  });

  // 3d. A cron schedule made for the agent (issue 21, item 11) is listed with its policy.
  await step(page, 'list a schedule', async () => {
    const path = `/api/v1/tenants/${encodeURIComponent(TENANT)}/agents/${encodeURIComponent(agentId)}/schedules`;
    const response = await fetch(BASE_URL + path, {
      method: 'POST',
      headers: { Authorization: `Bearer ${API_TOKEN}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ cron: '30 8 * * MON-FRI', timeZone: 'Europe/Paris', overlap: 'bufferOne' }),
    });
    if (response.status !== 201) throw new Failure(`POST ${path} answered ${response.status}: ${await response.text()}`);
    const schedule = await response.json();
    const row = page.locator(`#schedules > li[data-schedule-id="${schedule.scheduleId}"]`);
    await row.waitFor({ timeout: STEP_TIMEOUT });
    const shown = await row.textContent();
    for (const part of ['30 8 * * MON-FRI', 'Europe/Paris', 'overlap bufferOne', 'next ']) {
      if (!shown.includes(part)) throw new Failure(`the schedule row lacks "${part}": ${shown}`);
    }
  });

  // 4. The mode, changed on the page, with its audit.
  await step(page, 'change the mode', async () => {
    await page.locator(byTestId('mode-select')).selectOption(NEW_MODE);
    await page.locator(byTestId('mode-apply')).click();
    await page.locator(`#mode-changes > li[data-source="ui"][data-to="${NEW_MODE}"]`).waitFor();
    await page.waitForFunction((mode) => document.querySelector('[data-testid="agent-mode"]')?.textContent === mode, NEW_MODE);
  });

  // 4b. A mode change the agent proposes, approved on the page: the audit says "approval".
  const proposal = `/call soa_propose_mode_change ${JSON.stringify({ mode: 'Incident', reason: 'A drill.' })}`;
  await step(page, 'approve a proposed mode change', async () => {
    await page.locator(byTestId('chat-text')).fill(proposal);
    await page.locator(byTestId('chat-send')).click();
    const open = '#approvals > li[data-decision-kind="mode_change"]';
    await page.locator(open).first().waitFor({ timeout: STEP_TIMEOUT });
    await page.locator(`${open} ${byTestId('approval-approve')}`).first().click();
    await page.locator('#mode-changes > li[data-source="approval"][data-to="Incident"]').waitFor({ timeout: STEP_TIMEOUT });
    await page.waitForFunction(() => document.querySelector('[data-testid="agent-mode"]')?.textContent === 'Incident');
  });

  // 5. A budget set on the page (system_configs, live from the next tick).
  await step(page, 'set a budget', async () => {
    await page.locator(byTestId('budget-key')).selectOption('AgentDispatcher:TickMaxTurns');
    await page.locator(byTestId('budget-value')).fill('12');
    await page.locator(byTestId('budget-save')).click();
    await page.waitForFunction(() => document.querySelector(
      '[data-testid="budgets"] > tr[data-key="AgentDispatcher:TickMaxTurns"] > td:last-child')?.textContent === '12');
  });

  const shown = await page.evaluate(() => ({
    turns: [...document.querySelectorAll('#ledger > li')].map((li) => li.dataset.eventKind),
    budgets: document.querySelectorAll('[data-testid="budgets"] > tr').length,
    budgetValues: [...document.querySelectorAll('[data-testid="budgets"] > tr')].map((tr) => tr.textContent),
    spend: document.querySelector('[data-testid="spend"]')?.textContent,
    connection: document.querySelector('[data-testid="connection"]')?.textContent,
  }));
  if (shown.budgets !== 5) throw new Failure(`the budgets table has ${shown.budgets} rows, not 5`);
  if (!/model call/.test(shown.spend || '')) throw new Failure(`no spend shown: ${JSON.stringify(shown.spend)}`);
  const shownHello = (await messages(page)).find((m) => m.direction === 'operator' && m.text === hello);
  if (!shownHello) throw new Failure('the operator message is not shown as text');

  await assertNoInjection(page, 'at the end');
  if (process.env.SCREENSHOT) await page.screenshot({ path: process.env.SCREENSHOT, fullPage: true });
  if (problems.length) throw new Failure(`the page reported problems:\n  ${problems.join('\n  ')}`);
  return {
    ok: true,
    base_url: BASE_URL,
    tenant: TENANT,
    agent: agentId,
    feature_before: featureOff,
    greeting,
    reply: reply && reply.text,
    decision: { id: decisionId, resolution: resolved.resolution },
    mode: NEW_MODE,
    ...shown,
    xss: 'rendered as text',
    elapsed_ms: Date.now() - started,
  };
}

async function main() {
  if (!existsSync(CHROMIUM_PATH)) throw new Failure(`Chromium not found at ${CHROMIUM_PATH} (set CHROMIUM_PATH)`);
  if (!API_TOKEN) throw new Failure('API_TOKEN is required (agent changes need the bearer token)');
  const browser = await chromium.launch({
    executablePath: CHROMIUM_PATH,
    args: [
      '--headless=new', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync',
    ],
  });
  const problems = [];
  try {
    const context = await browser.newContext();
    const page = await context.newPage();
    page.setDefaultTimeout(STEP_TIMEOUT);
    page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
    page.on('console', (message) => {
      if (message.type() === 'error' || /Content Security Policy/i.test(message.text())) {
        // The tenant is off until enabled: its first listing answers 403, as designed.
        if (/status of 403/.test(message.text())) return;
        // An unset budget key answers 404: the page shows "not set".
        if (/status of 404/.test(message.text()) && /\/config\//.test(message.location()?.url || '')) return;
        const where = message.location()?.url;
        problems.push(`console ${message.type()}: ${message.text()}${where ? ` (${where})` : ''}`);
      }
    });
    page.on('request', (req) => {
      const url = req.url();
      if (!url.startsWith(BASE_URL + '/') && !url.startsWith('data:')) problems.push(`request outside the server: ${url}`);
    });
    const summary = await run(page, problems);
    process.stdout.write(JSON.stringify(summary) + '\n');
  } finally {
    await browser.close();
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    const message = err instanceof Failure ? err.message : (err && err.stack) || String(err);
    process.stderr.write(`agents_page: FAILED: ${message}\n`);
    process.stdout.write(JSON.stringify({ ok: false, error: message.split('\n')[0] }) + '\n');
    process.exit(1);
  },
);
