// The workspace status calls of the published TypeScript SDK (@qwen-code/sdk, DaemonClient)
// against a running agentrt with a token (the strict mutation routes need one).
//
//   BASE_URL=http://127.0.0.1:4170 TOKEN=... node tests/node/workspace_status.mjs
//
// Prints one JSON line per step ({"step", "ok", ...}); exits 0 when every step passed,
// 1 on the first failure (with a message on stderr), 2 on the global watchdog.

import { DaemonClient, DaemonHttpError } from '@qwen-code/sdk/daemon';

const BASE_URL = process.env.BASE_URL;
const TOKEN = process.env.TOKEN || undefined;
const TOTAL_TIMEOUT_MS = Number(process.env.TOTAL_TIMEOUT_MS || 120_000);

const TAGS = [
  'workspace_env',
  'workspace_preflight',
  'workspace_providers',
  'workspace_skills',
  'workspace_mcp',
  'workspace_tool_toggle',
  'workspace_init',
  'session_supported_commands',
  'session_tasks',
  'session_recap',
];

class StepFailure extends Error {}

function fail(message) {
  throw new StepFailure(message);
}

function emit(record) {
  process.stdout.write(`${JSON.stringify(record)}\n`);
}

let currentStep = '(start)';
async function step(name, fn) {
  currentStep = name;
  const details = (await fn()) ?? {};
  emit({ step: name, ok: true, ...details });
}

function expect(condition, what, value) {
  if (!condition) fail(`${what}: got ${JSON.stringify(value)}`);
}

async function main() {
  if (!BASE_URL) fail('BASE_URL is not set');
  if (!TOKEN) fail('TOKEN is not set (the strict mutation routes need one)');
  const client = new DaemonClient({ baseUrl: BASE_URL, token: TOKEN, fetchTimeoutMs: 15_000 });

  let workspace;
  await step('capabilities advertise the workspace status tags', async () => {
    const caps = await client.capabilities();
    const missing = TAGS.filter((tag) => !caps.features.includes(tag));
    expect(missing.length === 0, 'missing tags', missing);
    workspace = caps.workspaceCwd;
  });

  await step('workspaceEnv', async () => {
    const env = await client.workspaceEnv();
    expect(env.v === 1 && env.workspaceCwd === workspace, 'envelope', env);
    const secret = env.cells.find((c) => c.kind === 'env_var' && c.name === 'QWEN_SERVER_TOKEN');
    expect(secret && !('value' in secret), 'QWEN_SERVER_TOKEN cell', secret);
    expect(!JSON.stringify(env).includes(TOKEN), 'the token leaked', env);
    return { cells: env.cells.length };
  });

  await step('workspacePreflight', async () => {
    const preflight = await client.workspacePreflight();
    const kinds = Object.fromEntries(preflight.cells.map((c) => [c.kind, c.status]));
    for (const kind of ['workspace_dir', 'store', 'temporal', 'worker', 'providers']) {
      expect(kinds[kind] === 'ok', `preflight cell ${kind}`, preflight.cells);
    }
    return { kinds };
  });

  await step('workspaceProviders', async () => {
    const providers = await client.workspaceProviders();
    expect(providers.current?.authType === 'scripted', 'current', providers);
    expect(providers.providers[0]?.models?.[0]?.isCurrent === true, 'models', providers);
    return { current: providers.current };
  });

  await step('workspaceSkills + workspaceMcp', async () => {
    const skills = await client.workspaceSkills();
    expect(Array.isArray(skills.skills) && skills.skills.length === 0, 'skills', skills);
    const mcp = await client.workspaceMcp();
    // No mcpServers configured: as the reference daemon answers (initialized, completed).
    expect(
      mcp.initialized === true && mcp.discoveryState === 'completed' && mcp.servers.length === 0,
      'mcp',
      mcp,
    );
  });

  const session = await client.createOrAttachSession({ workspaceCwd: workspace, sessionScope: 'thread' });
  const sessionId = session.sessionId;

  await step('sessionSupportedCommands + sessionTasks', async () => {
    const commands = await client.sessionSupportedCommands(sessionId);
    expect(commands.sessionId === sessionId && Array.isArray(commands.availableCommands), 'commands', commands);
    const tasks = await client.sessionTasks(sessionId);
    expect(tasks.sessionId === sessionId && tasks.tasks.length === 0, 'tasks', tasks);
  });

  await step('recapSession (nothing to recap yet)', async () => {
    const recap = await client.recapSession(sessionId);
    expect(recap.sessionId === sessionId && recap.recap === null, 'recap', recap);
  });

  await step('setSessionApprovalMode persist', async () => {
    const result = await client.setSessionApprovalMode(sessionId, 'auto-edit', { persist: true });
    expect(result.mode === 'auto-edit' && result.previous === 'default' && result.persisted === true, 'result', result);
    return { result };
  });

  await step('setWorkspaceToolEnabled', async () => {
    const off = await client.setWorkspaceToolEnabled('write_file', false);
    expect(off.toolName === 'write_file' && off.enabled === false, 'disable', off);
    const on = await client.setWorkspaceToolEnabled('write_file', true);
    expect(on.enabled === true, 'enable', on);
  });

  await step('initWorkspace', async () => {
    const created = await client.initWorkspace();
    expect(created.action === 'created' && created.path.startsWith(workspace), 'created', created);
    const again = await client.initWorkspace();
    expect(again.action === 'noop', 'noop', again);
    return { path: created.path };
  });

  await client.closeSession(sessionId);
}

const watchdog = setTimeout(() => {
  process.stderr.write(`FAILED (watchdog): step "${currentStep}" still running\n`);
  process.exit(2);
}, TOTAL_TIMEOUT_MS);

main().then(
  () => {
    clearTimeout(watchdog);
    emit({ step: 'done', ok: true });
  },
  (err) => {
    clearTimeout(watchdog);
    const message = err instanceof DaemonHttpError ? `${err.message} (HTTP ${err.status}, ${JSON.stringify(err.body)})` : String(err?.stack ?? err);
    emit({ step: currentStep, ok: false, error: message });
    process.stderr.write(`FAILED at "${currentStep}": ${message}\n`);
    process.exit(1);
  },
);
