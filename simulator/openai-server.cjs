#!/usr/bin/env node
// A deterministic OpenAI-compatible streaming server for gpushare's load generator tests: POST
// /v1/completions and /v1/chat/completions stream max_tokens tokens, the first --ttft-ms after the
// request arrives and each next one --itl-ms later; GET /v1/models answers. It listens on 127.0.0.1
// (--port, 0 for any) and prints `port N` on stdout once listening.
// Hostile modes (--mode): never-ready (accepts connections, answers nothing), http-500, redirect (HTTP
// 307 to another path), stall (ready, but holds every completion request unanswered), cut (closes the
// connection half-way through the tokens), garbage (streams a line that is not JSON), ignore-max-tokens
// (streams twice max_tokens), no-tokens (streams max_tokens chunks of empty text, then [DONE]). --serial
// serves one request at a time, the others queueing (a stalled server).
// Stream ends as other engines send them (ok streams, unless said): no-done (transformers serve: the
// last text chunk is followed by a finish chunk with an empty delta carrying usage, and no [DONE]),
// usage-end (llama.cpp: a finish chunk, a usage chunk with empty choices, then [DONE]), usage-mismatch
// (as usage-end, its usage one token below the chunks sent), no-finish (the text chunks, then the
// response ends: no finish_reason, no [DONE]), cut-mid-event (a finish chunk whose event is never
// ended: the response ends inside it). reset-reused (what gpushare saw of llama.cpp's server: every
// second request on a kept-alive connection refused with ECONNRESET; here a connection that carried a
// completion is reset when another comes on it, its response having said no `Connection: close`).
// A fleet on CPU (issue #49): --tokens-per-s R is the engine's token rate, shared by every request in
// flight (each token, the first too, waits its turn: n streams get R/n tokens/s each, so throughput
// saturates at R and TTFT and ITL grow with the load, as a real engine's do; --itl-ms stays each
// stream's floor). --model-gb G is the model's size: reported by GET /v1/models (`model_gb`) and, with
// --gpu-gb B and --mem-fraction F (the {mem_fraction} the server is given), checked at start: G > F × B
// exits 1 with one line, as an engine whose weights do not fit its memory share refuses to start.
// koboldcpp (as KoboldCpp 1.76 streams: 4 tokens a chunk, finish_reason "null" on each chunk before the
// last, "length" on the last, no usage, and `data: [DONE]` with no blank line after it).
// --warm-ms N: a server warming up (lazy initialisation, caches): for N ms from its first completion
// request, every delay is stretched by a factor falling linearly from 5 to 1.
// --peers-dir D --ready-peers N: servers started together (issue #49's parallel start): each writes a
// file named by its pid into D when it starts, and GET /v1/models answers 503 until D holds N files:
// started one at a time, each waiting for the one before to be ready, the first is never ready.
// --max-peers N (with --peers-dir): a GPU that holds N servers: one started while N others (live pids in
// D) run exits 1 with one line, as an engine that finds too little memory left refuses to start.
'use strict';
const http = require('node:http');

function flag(name, fallback) {
  const i = process.argv.indexOf(`--${name}`);
  return i === -1 ? fallback : process.argv[i + 1];
}
const ttftMs = Number(flag('ttft-ms', '20'));
const itlMs = Number(flag('itl-ms', '5'));
const mode = flag('mode', 'ok');
const serial = process.argv.includes('--serial');
const port = Number(flag('port', '0'));
const tokensPerS = Number(flag('tokens-per-s', 'Infinity'));
const modelGb = Number(flag('model-gb', '0'));
const gpuGb = Number(flag('gpu-gb', 'Infinity'));
const memFraction = Number(flag('mem-fraction', '1'));
const warmMs = Number(flag('warm-ms', '0'));
const peersDir = flag('peers-dir', null);
const readyPeers = Number(flag('ready-peers', '0'));
// --models name=label,…: one server of several models (a fleet's in-process arm): /v1/models lists the names,
// and a request naming none of them gets 404, as an engine answers a model it does not serve.
const models = (flag('models', null) ?? '')
  .split(',')
  .filter((m) => m !== '')
  .map((m) => m.split('=')[0]);
const MODES = [
  'ok',
  'never-ready',
  'http-500',
  'redirect',
  'stall',
  'cut',
  'garbage',
  'ignore-max-tokens',
  'no-tokens',
  'no-done',
  'usage-end',
  'usage-mismatch',
  'no-finish',
  'cut-mid-event',
  'reset-reused',
  'koboldcpp',
];
if (!MODES.includes(mode) || !(ttftMs >= 0) || !(itlMs >= 0)) {
  process.stderr.write(`openai-server: --mode is one of ${MODES.join(', ')}; --ttft-ms and --itl-ms are ms >= 0\n`);
  process.exit(2);
}
if (!(tokensPerS > 0) || !(modelGb >= 0) || !(gpuGb > 0) || !(memFraction > 0 && memFraction <= 1)) {
  process.stderr.write(
    'openai-server: --tokens-per-s and --gpu-gb are > 0, --model-gb >= 0, --mem-fraction in (0, 1]\n',
  );
  process.exit(2);
}
if (modelGb > memFraction * gpuGb) {
  process.stderr.write(
    `openai-server: the model (${modelGb} GB) does not fit its memory share (${memFraction} x ${gpuGb} GB = ${memFraction * gpuGb} GB)\n`,
  );
  process.exit(1);
}
if (!(warmMs >= 0)) {
  process.stderr.write('openai-server: --warm-ms is ms >= 0\n');
  process.exit(2);
}

const maxPeers = Number(flag('max-peers', '0'));
if (peersDir !== null && maxPeers > 0) {
  const alive = require('./alive.cjs');
  const live = require('node:fs')
    .readdirSync(peersDir)
    .filter((name) => Number(name) !== process.pid && alive(Number(name))).length;
  if (live >= maxPeers) {
    process.stderr.write(
      `openai-server: out of memory: ${live} servers already hold the GPU (--max-peers ${maxPeers})\n`,
    );
    process.exit(1);
  }
}
if (peersDir !== null) require('node:fs').writeFileSync(require('node:path').join(peersDir, String(process.pid)), '');
/** Whether the servers it waits for (--ready-peers) have all started. */
const peersStarted = () => peersDir === null || require('node:fs').readdirSync(peersDir).length >= readyPeers;

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
let queue = Promise.resolve();
let firstAt = null;
/** A delay as the server warming up stretches it (--warm-ms). */
function warming(ms) {
  firstAt ??= Date.now();
  const left = warmMs - (Date.now() - firstAt);
  return left > 0 ? ms * (1 + (4 * left) / warmMs) : ms;
}

// The engine's token rate (--tokens-per-s): streams wait in one queue, each granted its next token in
// turn; credit accrues at the rate by the clock while streams wait, and is not banked while none does.
const waiting = [];
let credit = 0;
let lastMs = 0;
let engineTimer = null;
function engineTick() {
  engineTimer = null;
  const nowMs = performance.now();
  credit += ((nowMs - lastMs) * tokensPerS) / 1000;
  lastMs = nowMs;
  while (credit >= 1 && waiting.length > 0) {
    credit -= 1;
    waiting.shift()();
  }
  if (waiting.length > 0) engineTimer = setTimeout(engineTick, Math.max(1, 1000 / tokensPerS));
  else credit = Math.min(credit, 1);
}
function engineTurn() {
  return new Promise((resolve) => {
    if (waiting.length === 0 && engineTimer === null) lastMs = performance.now();
    waiting.push(resolve);
    if (engineTimer === null) engineTimer = setTimeout(engineTick, Math.max(1, 1000 / tokensPerS));
  });
}

function readBody(req) {
  return new Promise((resolve) => {
    let text = '';
    req.on('data', (c) => {
      text += c;
    });
    req.on('end', () => resolve(text));
  });
}

async function stream(res, body, chat) {
  const asked = Number.isInteger(body.max_tokens) && body.max_tokens > 0 ? body.max_tokens : 16;
  const tokens = mode === 'ignore-max-tokens' ? asked * 2 : asked;
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  const send = (chunk) => res.write(`data: ${JSON.stringify(chunk)}\n\n`);
  if (chat)
    send({ id: 'chat-1', object: 'chat.completion.chunk', choices: [{ index: 0, delta: { role: 'assistant' } }] });
  // 0: no timer at all (a timer of 0 ms still waits about 1 ms): the null server of the generator's ceiling.
  if (ttftMs > 0) await sleep(warming(ttftMs));
  for (let i = 0; i < tokens; i++) {
    // 0: a turn of the event loop, not a timer: each token its own write, as a real stream sends them.
    const floor = i > 0 ? (itlMs > 0 ? sleep(warming(itlMs)) : new Promise((resolve) => setImmediate(resolve))) : null;
    if (tokensPerS < Number.POSITIVE_INFINITY) await Promise.all([floor, engineTurn()]);
    else if (floor !== null) await floor;
    if (mode === 'cut' && i === Math.floor(tokens / 2)) {
      res.socket.destroy();
      return;
    }
    if (mode === 'garbage' && i === Math.floor(tokens / 2)) {
      res.write('data: {"choices": [ this is not json\n\n');
      continue;
    }
    if (mode === 'koboldcpp') {
      if (i % 4 === 3 || i === tokens - 1) koboldChunk(send, chat, i, tokens);
      continue;
    }
    const text = mode === 'no-tokens' ? '' : ` tok${i}`;
    send(
      chat
        ? { id: 'chat-1', object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content: text } }] }
        : { id: 'cmpl-1', object: 'text_completion', choices: [{ index: 0, text }] },
    );
  }
  end(res, send, chat, tokens);
}

/** KoboldCpp's chunk: the tokens since the last one, finish_reason the string "null" until the last. */
function koboldChunk(send, chat, i, tokens) {
  let text = '';
  for (let j = i - (i % 4); j <= i; j++) text += ` tok${j}`;
  const finish_reason = i === tokens - 1 ? 'length' : 'null';
  send(
    chat
      ? { object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content: text }, finish_reason }] }
      : { object: 'text_completion', choices: [{ index: 0, text, finish_reason }] },
  );
}

/** How the stream ends, by mode: [DONE] alone (ok, and our reference server's [DONE]) or as other engines end theirs. */
function end(res, send, chat, tokens) {
  const finish = chat
    ? { id: 'chat-1', object: 'chat.completion.chunk', choices: [{ index: 0, delta: {}, finish_reason: 'length' }] }
    : { id: 'cmpl-1', object: 'text_completion', choices: [{ index: 0, text: '', finish_reason: 'length' }] };
  const usage = (completion) => ({ prompt_tokens: 8, completion_tokens: completion, total_tokens: 8 + completion });
  if (mode === 'no-done') {
    send({ ...finish, usage: usage(tokens) });
    res.end();
  } else if (mode === 'usage-end' || mode === 'usage-mismatch') {
    send(finish);
    send({ id: 'chunk-usage', choices: [], usage: usage(mode === 'usage-end' ? tokens : tokens - 1) });
    res.end('data: [DONE]\n\n');
  } else if (mode === 'no-finish') res.end();
  else if (mode === 'koboldcpp') res.end('data: [DONE]');
  else if (mode === 'cut-mid-event') res.end(`data: ${JSON.stringify(finish)}\n`);
  else res.end('data: [DONE]\n\n');
}

/** Sockets that have carried a completion request (reset-reused). */
const used = new WeakSet();

async function handle(req, res) {
  if (mode === 'never-ready') return; // holds the connection, answers nothing
  if (mode === 'reset-reused' && req.method === 'POST') {
    if (used.has(req.socket)) return req.socket.resetAndDestroy();
    used.add(req.socket);
  }
  if (req.method === 'GET' && req.url === '/v1/models') {
    if (!peersStarted()) {
      res.writeHead(503);
      res.end();
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    const ids = models.length > 0 ? models : ['fake'];
    res.end(JSON.stringify({ object: 'list', data: ids.map((id) => ({ id, object: 'model', model_gb: modelGb })) }));
    return;
  }
  const chat = req.url === '/v1/chat/completions';
  if (req.method !== 'POST' || !(chat || req.url === '/v1/completions')) {
    res.writeHead(404);
    res.end();
    return;
  }
  const text = await readBody(req);
  if (mode === 'stall') return; // holds the request, answers nothing
  if (mode === 'redirect') {
    res.writeHead(307, { location: '/v2/completions' });
    res.end();
    return;
  }
  if (mode === 'http-500') {
    res.writeHead(500, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ error: { message: 'simulated failure' } }));
    return;
  }
  let body;
  try {
    body = JSON.parse(text);
  } catch {
    res.writeHead(400);
    res.end();
    return;
  }
  if (models.length > 0 && !models.includes(body.model)) {
    res.writeHead(404, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ error: { message: `no model ${body.model}: this server serves ${models.join(', ')}` } }));
    return;
  }
  if (!serial) return stream(res, body, chat);
  const turn = queue.then(() => stream(res, body, chat));
  queue = turn.catch(() => {});
  return turn;
}

const server = http.createServer((req, res) => {
  handle(req, res).catch(() => res.destroy());
});
server.keepAliveTimeout = 60_000;
server.listen(port, '127.0.0.1', () => {
  process.stdout.write(`port ${server.address().port}\n`);
});
process.on('SIGTERM', () => process.exit(0));
