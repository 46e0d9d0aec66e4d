// Drives `conduit-mcp serve` over HTTP with the official TypeScript MCP SDK 1.x
// (@modelcontextprotocol/sdk, pinned in tests/legacy_client/package-lock.json),
// a real 2025-11-25 client, through its experimental tasks API
// (`client.experimental.tasks`): a task-augmented tools/call followed to its
// result (tasks/get polled, tasks/result), tasks/list, then a running task
// cancelled and read again — which must answer `cancelled`, not "Task not
// found" (issue 34). Every step asserts; any failure exits non-zero.
//
//   node legacy_client.mjs URL
//
// scripts/legacy_client.sh installs the SDK under target/ and runs this there.

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, McpError } from '@modelcontextprotocol/sdk/types.js';

const PINNED = '1.32.2';
const RELATED_TASK = 'io.modelcontextprotocol/related-task';
// How long a task may take to reach a status before the run fails.
const WAIT_MS = 30_000;

const url = process.argv[2];
if (!url) {
  console.error('usage: node legacy_client.mjs URL');
  process.exit(2);
}

const sdk = JSON.parse(
  readFileSync(new URL('./node_modules/@modelcontextprotocol/sdk/package.json', import.meta.url), 'utf8'),
);
assert.equal(sdk.version, PINNED, `the pinned SDK (found ${sdk.version})`);
assert.ok(process.versions.node.startsWith('22.'), `Node 22 (found ${process.version})`);

const step = (what) => console.log(`legacy_client.mjs: ${what}`);

/** Polls tasks/get until the task's status is one of `wanted`, at its own pollInterval, for at most WAIT_MS. */
async function waitForStatus(tasks, taskId, wanted) {
  const deadline = Date.now() + WAIT_MS;
  for (;;) {
    const task = await tasks.getTask(taskId);
    assert.equal(task.taskId, taskId);
    if (wanted.includes(task.status)) return task;
    assert.ok(['working', 'input_required'].includes(task.status), `unexpected status ${task.status}`);
    assert.ok(Date.now() < deadline, `task still ${task.status} after ${WAIT_MS} ms, waiting for ${wanted}`);
    await new Promise((done) => setTimeout(done, Math.min(task.pollInterval ?? 100, 500)));
  }
}

/** The JSON-RPC error `promise` rejects with. */
async function rejection(promise, what) {
  try {
    const value = await promise;
    assert.fail(`${what} answered ${JSON.stringify(value)}, not an error`);
  } catch (e) {
    assert.ok(e instanceof McpError, `${what}: ${e}`);
    return e;
  }
}

const client = new Client({ name: 'conduit-legacy-client-ts', version: '1.0.0' }, { capabilities: {} });
const transport = new StreamableHTTPClientTransport(new URL(url));
await client.connect(transport);
try {
  assert.equal(transport.protocolVersion, '2025-11-25', 'the 2025-11-25 era was negotiated');
  const caps = client.getServerCapabilities();
  assert.ok(caps?.tasks?.list && caps?.tasks?.cancel && caps?.tasks?.requests?.tools?.call, JSON.stringify(caps));
  const tools = new Map((await client.listTools()).tools.map((t) => [t.name, t]));
  assert.equal(tools.get('sleep')?.execution?.taskSupport, 'required', 'sleep is a task-only tool');
  assert.ok(tools.has('build'), `build in ${[...tools.keys()]}`);
  const tasks = client.experimental.tasks;
  step(`SDK ${sdk.version} on Node ${process.version}: connected, tools listed`);

  // A task-augmented tools/call, followed by the SDK to its result: it creates the
  // task, polls tasks/get, then reads tasks/result.
  const seen = [];
  let buildId;
  let streamed;
  const stream = tasks.callToolStream(
    { name: 'build', arguments: { ref: 'ts-sdk', steps: 1 } },
    CallToolResultSchema,
    { task: { ttl: 60_000 } },
  );
  for await (const message of stream) {
    seen.push(message.type);
    if (message.type === 'taskCreated') {
      buildId = message.task.taskId;
      assert.equal(message.task.status, 'working');
      assert.equal(message.task.ttl, 60_000);
    } else if (message.type === 'taskStatus') {
      assert.equal(message.task.taskId, buildId);
    } else if (message.type === 'result') {
      streamed = message.result;
    } else {
      assert.fail(`the build stream ended with ${message.type}: ${message.error}`);
    }
  }
  assert.equal(seen[0], 'taskCreated', seen.join(','));
  assert.ok(seen.includes('taskStatus'), `tasks/get was polled: ${seen}`);
  assert.equal(seen.at(-1), 'result', seen.join(','));
  assert.equal(streamed.content[0].text, 'built ts-sdk in 1 steps');
  step('build: created as a task, polled with tasks/get, answered by tasks/result');

  const done = await waitForStatus(tasks, buildId, ['completed']);
  assert.equal(done.ttl, 60_000);
  const result = await tasks.getTaskResult(buildId, CallToolResultSchema);
  assert.equal(result.isError ?? false, false);
  assert.equal(result.content[0].text, 'built ts-sdk in 1 steps');
  assert.equal(result._meta?.[RELATED_TASK]?.taskId, buildId, 'tasks/result carries the related task');
  step('build: tasks/get completed, tasks/result read again');

  // A task that runs until cancelled: created through the same API (its first message).
  const sleeping = tasks.callToolStream({ name: 'sleep', arguments: { seconds: 600 } }, CallToolResultSchema, {
    task: { ttl: 60_000 },
  });
  const first = await sleeping.next();
  assert.equal(first.value?.type, 'taskCreated', JSON.stringify(first.value));
  const sleepId = first.value.task.taskId;
  await sleeping.return(undefined);
  assert.equal((await tasks.getTask(sleepId)).status, 'working');

  const listed = await tasks.listTasks();
  const status = new Map(listed.tasks.map((t) => [t.taskId, t.status]));
  assert.equal(status.get(buildId), 'completed', JSON.stringify(listed));
  assert.equal(status.get(sleepId), 'working', JSON.stringify(listed));
  step('tasks/list: the completed build and the running sleep');

  // The regression: cancelTask, then getTask must answer `cancelled`.
  const cancelled = await tasks.cancelTask(sleepId);
  assert.equal(cancelled.taskId, sleepId);
  assert.equal(cancelled.status, 'cancelled', JSON.stringify(cancelled));
  const after = await tasks.getTask(sleepId);
  assert.equal(after.status, 'cancelled', `tasks/get after tasks/cancel: ${JSON.stringify(after)}`);
  assert.equal(after.ttl, 60_000);
  const relisted = await tasks.listTasks();
  assert.equal(relisted.tasks.find((t) => t.taskId === sleepId)?.status, 'cancelled', JSON.stringify(relisted));
  const outcome = await rejection(tasks.getTaskResult(sleepId, CallToolResultSchema), 'tasks/result of a cancelled task');
  assert.equal(outcome.code, -32603, outcome.message);
  assert.match(outcome.message, /cancelled/);
  const again = await rejection(tasks.cancelTask(sleepId), 'tasks/cancel of a cancelled task');
  assert.equal(again.code, -32602, again.message);
  step('sleep: cancelled, then tasks/get, tasks/list, tasks/result and tasks/cancel answer it cancelled');
} finally {
  await client.close();
}
step('passed');
