// Drives a running agentrt through the published TypeScript SDK (@qwen-code/sdk, DaemonClient).
//
//   BASE_URL=http://127.0.0.1:4170 [TOKEN=...] node tests/node/daemon_client.mjs
//
// Prints one JSON line per step ({"step", "ok", "ms", ...}); exits 0 when every step
// passed, 1 on the first failure (with a message on stderr), 2 on the global watchdog.
// Every wait has a timeout: STEP_TIMEOUT_MS (default 60 s) for a turn or an event,
// the SDK's own 15 s fetch timeout for short calls, TOTAL_TIMEOUT_MS (default 300 s) overall.

import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

import { DaemonClient, DaemonHttpError } from '@qwen-code/sdk/daemon';

const BASE_URL = process.env.BASE_URL;
const TOKEN = process.env.TOKEN || undefined;
const STEP_TIMEOUT_MS = Number(process.env.STEP_TIMEOUT_MS || 60_000);
const TOTAL_TIMEOUT_MS = Number(process.env.TOTAL_TIMEOUT_MS || 300_000);
const FETCH_TIMEOUT_MS = 15_000;

class StepFailure extends Error {}

function fail(message) {
  throw new StepFailure(message);
}

function describeError(err) {
  if (err instanceof DaemonHttpError) {
    return `${err.message} (HTTP ${err.status}, body ${JSON.stringify(err.body)})`;
  }
  if (err instanceof Error) {
    const cause = err.cause instanceof Error ? ` (cause: ${err.cause.message})` : '';
    return `${err.name}: ${err.message}${cause}`;
  }
  return String(err);
}

function emit(record) {
  process.stdout.write(`${JSON.stringify(record)}\n`);
}

// Runs one step: prints {"step", "ok": true, "ms", ...details} or fails the run.
let currentStep = '(start)';
async function step(name, fn) {
  currentStep = name;
  const started = performance.now();
  const details = (await fn()) ?? {};
  emit({ step: name, ok: true, ms: Math.round(performance.now() - started), ...details });
  return details;
}

function withTimeout(promise, ms, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new StepFailure(`timed out after ${ms} ms: ${what}`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

// Collects the frames of one SSE subscription (SDK subscribeEvents) and lets steps wait on them.
class EventLog {
  constructor(label) {
    this.label = label;
    this.events = [];
    this.waiters = new Set();
    this.ended = false;
    this.error = undefined;
    this.epoch = undefined;
    this.controller = new AbortController();
  }

  // Opens the stream and resolves once the response headers were accepted.
  async open(client, sessionId, opts = {}) {
    let accepted;
    const acceptedPromise = new Promise((resolve) => {
      accepted = resolve;
    });
    const iterator = client.subscribeEvents(sessionId, {
      ...opts,
      signal: this.controller.signal,
      onEpoch: (epoch) => {
        this.epoch = epoch;
      },
      onSseStreamAccepted: (streamId) => accepted({ streamId }),
    });
    this.pump = (async () => {
      try {
        for await (const event of iterator) {
          this.events.push(event);
          this.notify();
        }
      } catch (err) {
        if (!this.controller.signal.aborted) this.error = err;
      } finally {
        this.ended = true;
        this.notify();
        accepted(undefined);
      }
    })();
    const result = await withTimeout(
      acceptedPromise,
      FETCH_TIMEOUT_MS + 5_000,
      `${this.label}: GET /session/:id/events response headers (the server must flush them at once)`,
    );
    if (result === undefined) {
      fail(`${this.label}: the event stream failed to open: ${describeError(this.error)}`);
    }
    return result;
  }

  notify() {
    for (const waiter of [...this.waiters]) waiter();
  }

  // Resolves with the first event (from index `from`) matching `predicate`.
  waitFor(predicate, what, { from = 0, timeoutMs = STEP_TIMEOUT_MS } = {}) {
    return new Promise((resolve, reject) => {
      let index = from;
      const check = () => {
        for (; index < this.events.length; index++) {
          if (predicate(this.events[index])) {
            cleanup();
            resolve(this.events[index]);
            return;
          }
        }
        if (this.ended) {
          cleanup();
          const why = this.error ? `: ${describeError(this.error)}` : '';
          reject(new StepFailure(`${this.label} ended before ${what}${why}; ${this.summary()}`));
        }
      };
      const timer = setTimeout(() => {
        cleanup();
        reject(new StepFailure(`timed out after ${timeoutMs} ms waiting for ${what}; ${this.summary()}`));
      }, timeoutMs);
      const cleanup = () => {
        clearTimeout(timer);
        this.waiters.delete(check);
      };
      this.waiters.add(check);
      check();
    });
  }

  summary() {
    const tail = this.events.slice(-12).map((e) => `${e.id ?? '-'}:${e.type}`);
    return `${this.label} saw ${this.events.length} frames, last: [${tail.join(', ')}]`;
  }

  close() {
    this.controller.abort();
  }
}

const dataOf = (event) => (event.data && typeof event.data === 'object' ? event.data : {});
const turnEndFor = (promptId) => (e) =>
  (e.type === 'turn_complete' || e.type === 'turn_error') && dataOf(e).promptId === promptId;

function checkTurnComplete(event, promptId) {
  if (event.type === 'turn_error') {
    fail(`turn ${promptId} failed: ${JSON.stringify(event.data)}`);
  }
  return dataOf(event).stopReason;
}

function checkMonotonic(events, label) {
  const ids = events.map((e) => e.id).filter((id) => id !== undefined);
  for (let i = 1; i < ids.length; i++) {
    if (!(ids[i] > ids[i - 1])) fail(`${label}: event ids not strictly increasing: ${ids.join(',')}`);
  }
  return ids;
}

function textPrompt(text) {
  return { prompt: [{ type: 'text', text }] };
}

async function expectHttpStatus(promise, status, what) {
  try {
    const value = await promise;
    if (value && typeof value[Symbol.asyncIterator] === 'function') {
      // subscribeEvents: the request is only made on the first next().
      await value.next();
      await value.return?.();
    }
  } catch (err) {
    if (err instanceof DaemonHttpError && err.status === status) return err;
    fail(`${what}: expected HTTP ${status}, got ${describeError(err)}`);
  }
  fail(`${what}: expected HTTP ${status}, but the call succeeded`);
}

async function promptAccepted(client, sessionId, text, clientId) {
  const accepted = await withTimeout(
    client.promptNonBlocking(sessionId, textPrompt(text), AbortSignal.timeout(FETCH_TIMEOUT_MS), clientId),
    FETCH_TIMEOUT_MS + 1_000,
    'POST /session/:id/prompt',
  );
  if (!accepted || typeof accepted.promptId !== 'string' || typeof accepted.lastEventId !== 'number') {
    fail(`POST /session/:id/prompt: expected a 202 {promptId, lastEventId}, got ${JSON.stringify(accepted)}`);
  }
  return accepted;
}

async function main() {
  if (!BASE_URL) fail('BASE_URL is not set (e.g. BASE_URL=http://127.0.0.1:4170)');
  const client = new DaemonClient({ baseUrl: BASE_URL, token: TOKEN, fetchTimeoutMs: FETCH_TIMEOUT_MS });
  const streams = [];

  try {
    await step('health', async () => {
      const health = await client.health();
      if (health?.status !== 'ok') fail(`GET /health: expected {status: "ok"}, got ${JSON.stringify(health)}`);
      return { value: health };
    });

    let caps;
    await step('capabilities', async () => {
      const value = await client.capabilities();
      if (value?.v !== 1) fail(`GET /capabilities: expected v: 1, got ${JSON.stringify(value)}`);
      if (!Array.isArray(value.features)) fail('GET /capabilities: features is not an array');
      if (typeof value.workspaceCwd !== 'string' || !value.workspaceCwd) {
        fail(`GET /capabilities: workspaceCwd missing: ${JSON.stringify(value)}`);
      }
      caps = value;
      return { workspaceCwd: value.workspaceCwd, features: value.features.length, mode: value.mode ?? null };
    });
    const workspace = caps.workspaceCwd;

    let session;
    await step('createOrAttachSession', async () => {
      const value = await client.createOrAttachSession({ workspaceCwd: workspace, sessionScope: 'thread' });
      if (typeof value?.sessionId !== 'string' || !value.sessionId) {
        fail(`POST /session: no sessionId in ${JSON.stringify(value)}`);
      }
      if (value.workspaceCwd !== workspace) {
        fail(`POST /session: workspaceCwd ${value.workspaceCwd} != capabilities ${workspace}`);
      }
      session = value;
      return { value };
    });
    const sessionId = session.sessionId;
    const clientId = session.clientId; // forwarded as X-Qwen-Client-Id, as DaemonSessionClient does

    const live = new EventLog('live stream');
    streams.push(live);
    await step('subscribeEvents (live)', async () => {
      const { streamId } = await live.open(client, sessionId, clientId ? { clientId } : {});
      return { streamId: streamId ?? null, epoch: live.epoch ?? null };
    });

    await step('promptNonBlocking + turn_complete', async () => {
      const accepted = await promptAccepted(client, sessionId, 'hello from the sdk', clientId);
      const end = await live.waitFor(turnEndFor(accepted.promptId), `turn_complete of ${accepted.promptId}`);
      const stopReason = checkTurnComplete(end, accepted.promptId);
      if (stopReason !== 'end_turn') fail(`expected stopReason end_turn, got ${JSON.stringify(end.data)}`);
      if (end.id !== undefined && end.id <= accepted.lastEventId) {
        fail(`turn_complete id ${end.id} is not after the 202's lastEventId ${accepted.lastEventId}`);
      }
      const ids = checkMonotonic(live.events, 'live stream');
      return {
        promptId: accepted.promptId,
        lastEventId: accepted.lastEventId,
        turnCompleteId: end.id ?? null,
        stopReason,
        liveIds: ids,
        types: live.events.map((e) => e.type),
      };
    });

    await step('subscribeEvents replay (Last-Event-ID: 0)', async () => {
      const liveIds = live.events.map((e) => e.id).filter((id) => id !== undefined);
      const highWater = Math.max(0, ...liveIds);
      const replay = new EventLog('replay stream');
      streams.push(replay);
      await replay.open(client, sessionId, { lastEventId: 0, ...(clientId ? { clientId } : {}) });
      const done = await replay.waitFor(
        (e) => e.type === 'replay_complete' || (e.id !== undefined && e.id >= highWater),
        `replay_complete or the replayed frames up to id ${highWater}`,
        { timeoutMs: 20_000 },
      );
      // Give a replay_complete right after the last replayed frame a moment to arrive.
      if (done.type !== 'replay_complete') {
        await replay.waitFor((e) => e.type === 'replay_complete', 'replay_complete', { timeoutMs: 1_000 }).catch(() => {});
      }
      replay.close();
      const ids = checkMonotonic(replay.events, 'replay stream');
      if (ids.length === 0) fail(`replay with Last-Event-ID: 0 delivered no numbered frame; ${replay.summary()}`);
      if (ids[0] !== 1) fail(`replay should start at id 1, starts at ${ids[0]}`);
      const missing = liveIds.filter((id) => !ids.includes(id));
      if (missing.length > 0) fail(`replay misses ids seen live: ${missing.join(',')}`);
      const replayComplete = replay.events.find((e) => e.type === 'replay_complete');
      return {
        replayedIds: ids,
        replayComplete: replayComplete ? replayComplete.data : null,
        types: replay.events.map((e) => e.type),
      };
    });

    await step('prompt (blocking helper: 202 + temporary SSE from lastEventId)', async () => {
      const result = await withTimeout(
        client.prompt(sessionId, textPrompt('second prompt'), AbortSignal.timeout(STEP_TIMEOUT_MS), clientId),
        STEP_TIMEOUT_MS + 1_000,
        'prompt() resolving with the turn_complete',
      );
      if (result?.stopReason !== 'end_turn') fail(`prompt(): expected stopReason end_turn, got ${JSON.stringify(result)}`);
      return { value: result };
    });

    const madePath = join(workspace, 'sdk_made.txt');
    await step('permission: write_file → respondToPermission(proceed_once)', async () => {
      const from = live.events.length;
      const directive = `/call write_file ${JSON.stringify({ file_path: madePath, content: 'hi\n' })}`;
      const accepted = await promptAccepted(client, sessionId, `please write a file\n${directive}`, clientId);
      const request = await live.waitFor(
        (e) => e.type === 'permission_request' || turnEndFor(accepted.promptId)(e),
        'permission_request',
        { from },
      );
      if (request.type !== 'permission_request') {
        fail(`the turn ended without a permission_request: ${JSON.stringify(request.data)}`);
      }
      const data = dataOf(request);
      if (typeof data.requestId !== 'string') fail(`permission_request without requestId: ${JSON.stringify(data)}`);
      const options = Array.isArray(data.options) ? data.options.map((o) => o.optionId) : [];
      if (!options.includes('proceed_once')) fail(`permission_request options lack proceed_once: ${JSON.stringify(data.options)}`);
      if (existsSync(madePath)) fail(`${madePath} exists before the permission was granted`);

      const voted = await client.respondToPermission(
        data.requestId,
        { outcome: { outcome: 'selected', optionId: 'proceed_once' } },
        clientId,
      );
      if (voted !== true) fail(`respondToPermission returned ${voted} (expected true: HTTP 200)`);
      const resolved = await live.waitFor(
        (e) => e.type === 'permission_resolved' && dataOf(e).requestId === data.requestId,
        `permission_resolved of ${data.requestId}`,
        { from },
      );
      const end = await live.waitFor(turnEndFor(accepted.promptId), `turn_complete of ${accepted.promptId}`, { from });
      const stopReason = checkTurnComplete(end, accepted.promptId);
      if (stopReason !== 'end_turn') fail(`expected stopReason end_turn, got ${JSON.stringify(end.data)}`);
      if (!existsSync(madePath)) fail(`${madePath} was not written`);
      const content = readFileSync(madePath, 'utf8');
      if (content !== 'hi\n') fail(`${madePath} holds ${JSON.stringify(content)}, expected "hi\\n"`);
      const again = await client.respondToPermission(
        data.requestId,
        { outcome: { outcome: 'selected', optionId: 'proceed_once' } },
        clientId,
      );
      if (again !== false) fail(`a second vote returned ${again} (expected false: HTTP 404)`);
      checkMonotonic(live.events, 'live stream');
      return {
        promptId: accepted.promptId,
        requestId: data.requestId,
        options,
        resolved: resolved.data,
        stopReason,
        file: madePath,
        secondVote: again,
      };
    });

    await step('workspace files: readWorkspaceFile, bytes, stat, list, glob, write/edit', async () => {
      if (!caps.features.includes('workspace_file_read')) fail('capabilities lack workspace_file_read');
      const file = await client.readWorkspaceFile('sdk_made.txt');
      if (file?.kind !== 'file' || file.path !== 'sdk_made.txt' || file.content !== 'hi\n') {
        fail(`readWorkspaceFile: unexpected ${JSON.stringify(file)}`);
      }
      if (!/^sha256:[0-9a-f]{64}$/.test(file.hash)) fail(`readWorkspaceFile: bad hash ${file.hash}`);
      const slice = await client.readWorkspaceFile(madePath, { maxBytes: 1 });
      if (slice.content !== 'h' || slice.hash !== file.hash || !slice.truncated) {
        fail(`readWorkspaceFile(maxBytes: 1): unexpected ${JSON.stringify(slice)}`);
      }
      const bytes = await client.readWorkspaceFileBytes('sdk_made.txt', { maxBytes: 16 });
      if (Buffer.from(bytes.contentBase64, 'base64').toString('utf8') !== 'hi\n' || bytes.hash !== file.hash) {
        fail(`readWorkspaceFileBytes: unexpected ${JSON.stringify(bytes)}`);
      }
      const stat = await client.fileStat('sdk_made.txt');
      if (stat?.type !== 'file' || stat.sizeBytes !== 3) fail(`fileStat: unexpected ${JSON.stringify(stat)}`);
      const list = await client.dirList('.');
      if (!list?.entries?.some((e) => e.name === 'sdk_made.txt' && e.kind === 'file')) {
        fail(`dirList: sdk_made.txt missing from ${JSON.stringify(list)}`);
      }
      const found = await client.glob('*.txt');
      if (!found?.matches?.includes('sdk_made.txt')) fail(`glob: unexpected ${JSON.stringify(found)}`);
      const missing = await expectHttpStatus(client.readWorkspaceFile('no/such.txt'), 404, 'GET /file (missing)');
      if (missing.body?.errorKind !== 'path_not_found') fail(`missing file: ${JSON.stringify(missing.body)}`);
      const outside = await expectHttpStatus(client.readWorkspaceFile('../x'), 400, 'GET /file (outside)');
      if (outside.body?.errorKind !== 'path_outside_workspace') fail(`outside: ${JSON.stringify(outside.body)}`);
      let write;
      if (!TOKEN) {
        // A strict mutation route: refused on a tokenless daemon, even on loopback.
        const refused = await expectHttpStatus(
          client.writeWorkspaceFile({ path: 'sdk_written.txt', content: 'x\n', mode: 'create' }),
          401,
          'POST /file/write without a configured token',
        );
        if (refused.body?.code !== 'token_required') fail(`expected token_required: ${JSON.stringify(refused.body)}`);
        write = 'token_required';
      } else {
        const created = await client.writeWorkspaceFile({ path: 'sdk_written.txt', content: 'a: 1\n', mode: 'create' });
        const edited = await client.editWorkspaceFile({
          path: 'sdk_written.txt',
          oldText: 'a: 1',
          newText: 'a: 2',
          expectedHash: created.hash,
        });
        if (edited?.replacements !== 1) fail(`editWorkspaceFile: unexpected ${JSON.stringify(edited)}`);
        write = { created, edited };
      }
      return { hash: file.hash, stat, globbed: found.matches, write };
    });

    await step('cancel while a permission is pending', async () => {
      const from = live.events.length;
      const cancelPath = join(workspace, 'sdk_cancelled.txt');
      const directive = `/call write_file ${JSON.stringify({ file_path: cancelPath, content: 'never\n' })}`;
      const accepted = await promptAccepted(client, sessionId, directive, clientId);
      const request = await live.waitFor(
        (e) => e.type === 'permission_request' || turnEndFor(accepted.promptId)(e),
        'permission_request',
        { from },
      );
      if (request.type !== 'permission_request') {
        fail(`the turn ended without a permission_request: ${JSON.stringify(request.data)}`);
      }
      await client.cancel(sessionId, clientId);
      const first = await live.waitFor(
        (e) =>
          e.type === 'prompt_cancelled' ||
          (turnEndFor(accepted.promptId)(e) && dataOf(e).stopReason === 'cancelled') ||
          (turnEndFor(accepted.promptId)(e) && e.type === 'turn_error'),
        'prompt_cancelled or turn_complete(stopReason: cancelled)',
        { from },
      );
      if (first.type === 'turn_error') fail(`cancel produced a turn_error: ${JSON.stringify(first.data)}`);
      // The turn should still close: wait (briefly) for its turn_complete too.
      const end = await live
        .waitFor(turnEndFor(accepted.promptId), `turn_complete of ${accepted.promptId}`, { from, timeoutMs: 10_000 })
        .catch(() => undefined);
      if (end && dataOf(end).stopReason !== 'cancelled') {
        fail(`turn_complete after cancel has stopReason ${JSON.stringify(dataOf(end).stopReason)}`);
      }
      if (existsSync(cancelPath)) fail(`${cancelPath} was written although the turn was cancelled`);
      const types = live.events.slice(from).map((e) => e.type);
      return { promptId: accepted.promptId, first: first.type, turnComplete: end ? end.data : null, types };
    });

    await step('closeSession → session_closed → 404', async () => {
      const from = live.events.length;
      await client.closeSession(sessionId, clientId);
      const closed = await live.waitFor((e) => e.type === 'session_closed', 'session_closed', {
        from,
        timeoutMs: 15_000,
      });
      // The live stream should end once the session is closed (informational).
      const deadline = Date.now() + 5_000;
      while (!live.ended && Date.now() < deadline) await sleep(50);
      await expectHttpStatus(
        client.subscribeEvents(sessionId, { signal: AbortSignal.timeout(FETCH_TIMEOUT_MS) }),
        404,
        'GET /session/:id/events after close',
      );
      await expectHttpStatus(
        client.promptNonBlocking(sessionId, textPrompt('after close'), AbortSignal.timeout(FETCH_TIMEOUT_MS)),
        404,
        'POST /session/:id/prompt after close',
      );
      await client.closeSession(sessionId); // idempotent for the SDK: 404 resolves
      checkMonotonic(live.events, 'live stream');
      return { closed: closed.data, liveStreamEnded: live.ended, totalLiveFrames: live.events.length };
    });
  } finally {
    for (const stream of streams) stream.close();
  }
}

const watchdog = setTimeout(() => {
  emit({ step: currentStep, ok: false, error: `global timeout after ${TOTAL_TIMEOUT_MS} ms` });
  process.stderr.write(`FAILED (watchdog): step "${currentStep}" still running after ${TOTAL_TIMEOUT_MS} ms\n`);
  process.exit(2);
}, TOTAL_TIMEOUT_MS);

main().then(
  () => {
    clearTimeout(watchdog);
    emit({ step: 'done', ok: true });
    process.exit(0);
  },
  (err) => {
    clearTimeout(watchdog);
    const message = describeError(err);
    emit({ step: currentStep, ok: false, error: message });
    process.stderr.write(`FAILED at step "${currentStep}": ${message}\n`);
    process.exit(1);
  },
);
