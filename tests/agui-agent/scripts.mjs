// The scripts the mock model follows (README.md, "Scripts").
//
// A script is chosen per request: `forwardedProps.script` when it names one,
// else the first script name that appears as a word in the last user
// message's text, else "text". Every script is a function of the prompt the
// model receives, so a run is decided by its request alone: when the prompt
// ends with tool results, the model answers with text quoting them; otherwise
// it makes the script's tool call(s).

import { simulateReadableStream } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';

export const SCRIPTS = ['disable', 'parallel', 'unknown-tool', 'locked', 'error', 'drop', 'text'];

function textOf(content) {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.filter((p) => p?.type === 'text').map((p) => p.text).join(' ');
  return '';
}

/** The script a RunAgentInput asks for: `{ name }`. */
export function chooseScript(input) {
  const asked = input.forwardedProps?.script;
  if (typeof asked === 'string' && SCRIPTS.includes(asked)) return { name: asked };
  const lastUser = [...input.messages].reverse().find((m) => m?.role === 'user');
  const words = textOf(lastUser?.content).toLowerCase().split(/[^a-z-]+/);
  const name = words.find((w) => SCRIPTS.includes(w)) ?? 'text';
  return { name };
}

// The declared tool that stands for `wanted` (e.g. "devices.disable"): the
// exact name, or the same name with "." written as "__" (agent-surface's
// tool names), "_" or "-" (what a page or a framework does to names outside
// [A-Za-z0-9_-]). Falls back to the "__" form, declared or not (a call of a
// tool the page did not declare, e.g. an unavailable one).
function toolName(tools, wanted) {
  const names = (tools ?? []).map((t) => t.name);
  const forms = [wanted, wanted.replace(/\./g, '__'), wanted.replace(/\./g, '_'), wanted.replace(/\./g, '-')];
  return forms.find((f) => names.includes(f)) ?? forms[1];
}

const usage = (input, output) => ({
  inputTokens: { total: input, noCache: input, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: output, text: output, reasoning: 0 },
});

function start(step) {
  return [
    { type: 'stream-start', warnings: [] },
    { type: 'response-metadata', id: `resp-${step}`, modelId: 'mock-model-id', timestamp: new Date(0) },
  ];
}

// A tool call as a provider streams it: input start, the JSON arguments in
// two deltas, input end, then the complete call.
function toolCall(id, name, args) {
  const json = JSON.stringify(args);
  const half = Math.ceil(json.length / 2);
  return [
    { type: 'tool-input-start', id, toolName: name },
    { type: 'tool-input-delta', id, delta: json.slice(0, half) },
    { type: 'tool-input-delta', id, delta: json.slice(half) },
    { type: 'tool-input-end', id },
    { type: 'tool-call', toolCallId: id, toolName: name, input: json },
  ];
}

function text(id, parts) {
  return [
    { type: 'text-start', id },
    ...parts.map((delta) => ({ type: 'text-delta', id, delta })),
    { type: 'text-end', id },
  ];
}

const finish = (unified, input, output) => ({ type: 'finish', finishReason: { unified, raw: unified }, usage: usage(input, output) });

function resultText(output) {
  if (!output) return '';
  if (output.type === 'text' || output.type === 'error-text') return output.value;
  if (output.type === 'json' || output.type === 'error-json') return JSON.stringify(output.value);
  if (output.type === 'content') return output.value.map((p) => p.text ?? '').join('');
  return JSON.stringify(output.value ?? output);
}

/** The stream parts of one model call for `script`, given the call's options. */
export function partsFor(script, options) {
  const prompt = options.prompt ?? [];
  const last = prompt[prompt.length - 1];
  const step = prompt.filter((m) => m.role === 'assistant').length + 1;
  const disable = toolName(options.tools, 'devices.disable');
  const list = toolName(options.tools, 'devices.list');

  if (script.name === 'error') {
    return [...start(step), { type: 'error', error: new Error('scripted model failure') }, finish('error', 10, 0)];
  }
  if (last?.role === 'tool') {
    const results = last.content.filter((p) => p.type === 'tool-result').map((p) => `${p.toolName}: ${resultText(p.output)}`);
    return [...start(step), ...text('txt-1', ['The tool answered ', results.join('; ')]), finish('stop', 20, 8)];
  }
  switch (script.name) {
    case 'disable':
      return [...start(step), ...toolCall('call-disable-1', disable, { reason: 'maintenance' }), finish('tool-calls', 12, 6)];
    case 'parallel':
      return [
        ...start(step),
        ...toolCall('call-list-1', list, { status: 'active' }),
        ...toolCall('call-disable-1', disable, { reason: 'maintenance' }),
        finish('tool-calls', 12, 12),
      ];
    case 'unknown-tool':
      return [...start(step), ...toolCall('call-purge-1', 'devices_purge', { deviceIds: ['dev-1'] }), finish('tool-calls', 12, 6)];
    case 'locked':
      return [...start(step), ...toolCall('call-disable-1', disable, { deviceIds: ['dev-9'] }), finish('tool-calls', 12, 6)];
    case 'drop':
      return [...start(step), ...toolCall('call-disable-1', disable, { reason: 'maintenance' }), finish('tool-calls', 12, 6)];
    default:
      return [...start(step), ...text('txt-1', ['Hello from ', 'the scripted agent.']), finish('stop', 10, 5)];
  }
}

/** A MockLanguageModelV3 that follows `script` on every call. */
export function scriptedModel(script) {
  return new MockLanguageModelV3({
    provider: 'agui-agent',
    modelId: 'mock-model-id',
    doStream: async (options) => ({
      stream: simulateReadableStream({ chunks: partsFor(script, options), initialDelayInMs: null, chunkDelayInMs: null }),
    }),
  });
}
