// Headless Chromium against a running agentrt: the /ui/agent-tools page end to end.
//
//   BASE_URL=http://127.0.0.1:4170 node tests/browser/agent_tools_page.mjs
//
// Starts a deterministic turn from the page with a prompt about the demo investigation
// (plus an HTML injection attempt), waits for the authorization panel, clicks Approve
// and waits for agent.turn.completed; then a second turn is denied and must end DENIED.
// Prints one JSON line and exits 0 on success; exits 1 with a message otherwise.
// Uses the system Chromium (CHROMIUM_PATH, default /usr/bin/chromium): never downloads one.

import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const BASE_URL = (process.env.BASE_URL || 'http://127.0.0.1:4170').replace(/\/+$/, '');
const CHROMIUM_PATH = process.env.CHROMIUM_PATH || '/usr/bin/chromium';
const STEP_TIMEOUT = Number(process.env.UI_TEST_STEP_TIMEOUT_MS || 60000);
const INJECTION = '<img src=x onerror=window.__xss=1>';
const FALLBACK_PROMPT = 'Who controls the shell companies and where did the money go?';
const HERE = dirname(fileURLToPath(import.meta.url));
const DEMO_FILE = join(HERE, '..', '..', 'runtime', 'investigation', 'demo_investigation.json');

class Failure extends Error {}

/** A question about a company of the demo investigation, when its file is there. */
function demoPrompt() {
  if (!existsSync(DEMO_FILE)) return FALLBACK_PROMPT;
  try {
    const nodes = JSON.parse(readFileSync(DEMO_FILE, 'utf8')).nodes || [];
    const named = nodes.filter((node) => node && typeof node.label === 'string' && node.label.trim());
    const organizations = named.filter((node) => /compan|organi[sz]ation|corp|firm|business/i.test(String(node.type)));
    const company = organizations.find((node) => /\b(Ltd|Limited|Holdings|Inc|LLC|GmbH|AS|SA)\b/.test(node.label))
      || organizations[0] || named[0];
    return company ? `Who controls ${company.label} and where did its money go?` : FALLBACK_PROMPT;
  } catch (err) {
    process.stderr.write(`note: could not read ${DEMO_FILE} (${err.message}); using a generic prompt\n`);
    return FALLBACK_PROMPT;
  }
}

const byTestId = (id) => `[data-testid="${id}"]`;

async function text(page, testId) {
  return (await page.locator(byTestId(testId)).first().textContent()) ?? '';
}

/** What the page shows, for the failure message. */
async function snapshot(page) {
  try {
    return await page.evaluate(() => {
      const read = (id) => document.querySelector(`[data-testid="${id}"]`)?.textContent ?? null;
      return {
        connection: read('connection'),
        banner: read('banner'),
        turnStatus: read('turn-status'),
        turnId: read('turn-id'),
        authMessage: read('auth-message'),
        events: [...document.querySelectorAll('#events > li')].map((li) => li.dataset.type).slice(-12),
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

/** Start a turn from the form; returns its id once the page shows it. */
async function startTurn(page, prompt) {
  await page.locator(byTestId('prompt')).fill(prompt);
  await page.locator(byTestId('agent')).selectOption('deterministic');
  const previous = await text(page, 'turn-id');
  await page.locator(byTestId('start')).click();
  await page.waitForFunction(
    (before) => {
      const id = document.querySelector('[data-testid="turn-id"]')?.textContent;
      return Boolean(id) && id !== before;
    },
    previous,
    { timeout: STEP_TIMEOUT },
  );
  return text(page, 'turn-id');
}

async function waitForAuthorization(page) {
  await page.locator(byTestId('authorization')).waitFor({ state: 'visible', timeout: STEP_TIMEOUT });
  await page.waitForFunction(
    () => document.querySelector('[data-testid="auth-question"]')?.textContent
      && !document.querySelector('[data-testid="approve"]')?.disabled,
    null,
    { timeout: STEP_TIMEOUT },
  );
  return text(page, 'auth-research-id');
}

async function waitForStatus(page, status) {
  await page.waitForFunction(
    (wanted) => document.querySelector('[data-testid="turn-status"]')?.textContent === wanted
      && document.querySelector('#events > li[data-type="agent.turn.completed"]'),
    status,
    { timeout: STEP_TIMEOUT },
  );
}

async function run(page, problems) {
  const started = Date.now();
  const prompt = `${demoPrompt()} ${INJECTION}`;

  const response = await step(page, 'open the page', () => page.goto(`${BASE_URL}/ui/agent-tools`));
  if (!response || response.status() !== 200) {
    throw new Failure(`GET /ui/agent-tools answered ${response ? response.status() : 'nothing'}`);
  }
  const csp = response.headers()['content-security-policy'] || '';
  if (!csp.includes("script-src 'self'")) throw new Failure(`no strict Content-Security-Policy: "${csp}"`);

  await step(page, 'open a session', () => page.waitForSelector(
    'body[data-ready="true"] [data-testid="connection"][data-state="ok"]', { timeout: STEP_TIMEOUT }));
  const tools = await step(page, 'load the catalog', async () => {
    await page.locator(`${byTestId('catalog')} > li`).first().waitFor({ timeout: STEP_TIMEOUT });
    return page.locator(`${byTestId('catalog')} > li`).count();
  });

  // 1. Approve: the turn completes.
  const turnId = await step(page, 'start a turn', () => startTurn(page, prompt));
  const shownPrompt = await text(page, 'turn-prompt');
  if (shownPrompt !== prompt) throw new Failure(`the prompt is not shown as text: ${JSON.stringify(shownPrompt)}`);
  const researchId = await step(page, 'wait for the authorization panel', () => waitForAuthorization(page));
  const question = await text(page, 'auth-question');
  if (!question.includes(INJECTION)) {
    throw new Failure(`the research question is not shown as text: ${JSON.stringify(question)}`);
  }
  await assertNoInjection(page, 'before the decision');
  await step(page, 'click Approve', () => page.locator(byTestId('approve')).click());
  await step(page, 'wait for agent.turn.completed (completed)', () => waitForStatus(page, 'completed'));
  const approved = await page.evaluate(() => ({
    events: document.querySelectorAll('#events > li').length,
    started: document.querySelector('#events > li[data-type="agent.turn.started"] .event-prompt')?.textContent,
    objects: document.querySelectorAll('[data-testid="objects"] > li').length,
    highlighted: document.querySelectorAll('[data-testid="objects"] > li.current').length,
    message: document.querySelector('[data-testid="auth-message"]')?.textContent,
  }));
  if (approved.started !== prompt) {
    throw new Failure(`agent.turn.started does not show the prompt as text: ${JSON.stringify(approved.started)}`);
  }
  if (approved.objects === 0 || approved.highlighted === 0) {
    throw new Failure(`referenced objects missing or none highlighted: ${JSON.stringify(approved)}`);
  }

  // 2. Deny: the resume answers 409 and the turn ends DENIED.
  const deniedTurn = await step(page, 'start a second turn', () => startTurn(page, demoPrompt()));
  const deniedResearch = await step(page, 'wait for the second authorization panel', () => waitForAuthorization(page));
  await step(page, 'click Deny', () => page.locator(byTestId('deny')).click());
  await step(page, 'wait for agent.turn.completed (denied)', () => waitForStatus(page, 'denied'));
  await step(page, 'wait for the resume answer', () => page.waitForFunction(
    () => / 409 /.test(document.querySelector('[data-testid="auth-message"]')?.textContent || ''),
    null,
    { timeout: STEP_TIMEOUT },
  ));
  const denyMessage = await text(page, 'auth-message');
  const denyResult = await text(page, 'turn-result');
  if (!denyResult.includes('DENIED')) throw new Failure(`the denied turn shows "${denyResult}", not DENIED`);

  await assertNoInjection(page, 'at the end');
  if (problems.length) throw new Failure(`the page reported problems:\n  ${problems.join('\n  ')}`);
  return {
    ok: true,
    base_url: BASE_URL,
    tools,
    approved: { turn_id: turnId, research_id: researchId, status: 'completed', ...approved },
    denied: { turn_id: deniedTurn, research_id: deniedResearch, status: 'denied', resume: denyMessage },
    xss: 'rendered as text',
    elapsed_ms: Date.now() - started,
  };
}

async function main() {
  if (!existsSync(CHROMIUM_PATH)) throw new Failure(`Chromium not found at ${CHROMIUM_PATH} (set CHROMIUM_PATH)`);
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
        // A resume answered 409 is logged by Chromium as a failed resource load: expected.
        if (/status of 409/.test(message.text())) return;
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
    process.stderr.write(`agent_tools_page: FAILED: ${message}\n`);
    process.stdout.write(JSON.stringify({ ok: false, error: message.split('\n')[0] }) + '\n');
    process.exit(1);
  },
);
