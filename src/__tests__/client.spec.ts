import { ServerConnection } from '@jupyterlab/services';

import {
  exportFilename,
  ThemistoApiError,
  ThemistoClient
} from '../api/client';
import {
  fullStep,
  localModel,
  prediction,
  predictorsInfo,
  trajectory
} from './fixtures';
import type { Trajectory } from '../api/records';

interface ICall {
  url: string;
  method: string;
  body: string | null;
}

/**
 * A client whose requests are answered by `reply` and recorded in `calls`.
 */
function makeClient(reply: (call: ICall) => Response): {
  client: ThemistoClient;
  calls: ICall[];
} {
  const calls: ICall[] = [];
  const fetchMock = async (
    input: RequestInfo,
    init?: RequestInit
  ): Promise<Response> => {
    const request = new Request(input, init);
    const call: ICall = {
      url: request.url,
      method: request.method,
      body: request.method === 'GET' ? null : await request.text()
    };
    calls.push(call);
    return reply(call);
  };
  const settings = ServerConnection.makeSettings({
    baseUrl: 'http://localhost:8888/lab-base/',
    fetch: fetchMock
  });
  return { client: new ThemistoClient(settings), calls };
}

function json(status: number, body: unknown): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { 'Content-Type': 'application/json' }
  });
}

const MODEL = {
  kernel_id: 'abc 1',
  recording: true,
  reason: null,
  trajectory_id: 't1',
  steps: 2
};

describe('ThemistoClient', () => {
  it('gets the kernel state', async () => {
    const { client, calls } = makeClient(() => json(200, MODEL));
    await expect(client.getKernel('abc 1')).resolves.toEqual(MODEL);
    expect(calls).toHaveLength(1);
    expect(calls[0].method).toBe('GET');
    const url = new URL(calls[0].url);
    expect(url.origin + url.pathname).toBe(
      'http://localhost:8888/lab-base/themisto/api/kernels/abc%201'
    );
  });

  it('puts the recording flag', async () => {
    const { client, calls } = makeClient(() =>
      json(200, { ...MODEL, recording: false })
    );
    const announced: boolean[] = [];
    client.recordingChanged.connect((_, model) =>
      announced.push(model.recording)
    );
    const result = await client.setRecording('abc 1', false);
    expect(result.recording).toBe(false);
    expect(announced).toEqual([false]);
    expect(calls[0].method).toBe('PUT');
    expect(JSON.parse(calls[0].body ?? '')).toEqual({ recording: false });
  });

  it('throws a typed error with the server message', async () => {
    const { client } = makeClient(() =>
      json(404, { message: 'Unknown kernel abc 1' })
    );
    const promise = client.getKernel('abc 1');
    await expect(promise).rejects.toBeInstanceOf(ThemistoApiError);
    await expect(promise).rejects.toMatchObject({
      status: 404,
      message: 'Unknown kernel abc 1'
    });
  });

  it('rejects a malformed reply', async () => {
    const { client } = makeClient(() => json(200, { kernel_id: 'abc 1' }));
    await expect(client.getKernel('abc 1')).rejects.toBeInstanceOf(
      ThemistoApiError
    );
  });

  it('turns network failures into status 0 errors', async () => {
    const { client } = makeClient(() => {
      throw new TypeError('connection refused');
    });
    await expect(client.getKernel('abc 1')).rejects.toMatchObject({
      status: 0
    });
  });
});

function makeApi(
  reply: (call: { url: URL; method: string; body: string | null }) => Response,
  token = ''
): {
  api: ThemistoClient;
  calls: Array<{ url: URL; method: string; body: string | null }>;
} {
  const calls: Array<{ url: URL; method: string; body: string | null }> = [];
  const fetchMock = async (
    input: RequestInfo,
    init?: RequestInit
  ): Promise<Response> => {
    const request = new Request(input, init);
    const call = {
      url: new URL(request.url),
      method: request.method,
      body: request.method === 'GET' ? null : await request.text()
    };
    calls.push(call);
    return reply(call);
  };
  const settings = ServerConnection.makeSettings({
    baseUrl: 'http://localhost:8888/base/',
    fetch: fetchMock,
    token
  });
  return { api: new ThemistoClient(settings), calls };
}

describe('ThemistoClient: live data', () => {
  it('reads the predictors', async () => {
    const info = predictorsInfo({
      local_models: [localModel('hybrid', 'running')]
    });
    const { api, calls } = makeApi(() => json(200, info));
    await expect(api.getPredictors()).resolves.toEqual(info);
    expect(calls[0].url.pathname).toBe('/base/themisto/api/predictors');
  });

  it('refuses a reply that breaks its schema, saying where', async () => {
    const { api } = makeApi(() =>
      json(200, { predictors: ['baseline'], contexts: ['none'], live: true })
    );
    await expect(api.getPredictors()).rejects.toThrow(
      "PredictorsInfo: must have required property 'speculation'"
    );
    const bad = makeApi(() =>
      json(200, { ...predictorsInfo(), local_models: [{ predictor: 'x' }] })
    ).api;
    await expect(bad.getPredictors()).rejects.toThrow(
      'PredictorsInfo/local_models/0'
    );
  });

  it('reports a server without predictions as an error', async () => {
    const { api } = makeApi(() => json(404, { message: 'Not Found' }));
    await expect(api.getPredictors()).rejects.toBeInstanceOf(ThemistoApiError);
  });

  it('finds the latest trajectory of a notebook from the total', async () => {
    const { api, calls } = makeApi(call =>
      call.url.searchParams.get('offset') === '2'
        ? json(200, page([trajectory({ id: 'last', steps: 9 })], 3, 2))
        : json(200, page([trajectory({ id: 'first', steps: 1 })], 3, 0))
    );
    await expect(
      api.latestTrajectory({ notebook: 'a b.ipynb' })
    ).resolves.toEqual(trajectory({ id: 'last', steps: 9 }));
    expect(calls[0].url.searchParams.get('notebook')).toBe('a b.ipynb');
    expect(calls[1].url.searchParams.get('offset')).toBe('2');
  });

  it('knows a notebook without trajectories', async () => {
    const { api, calls } = makeApi(() => json(200, page([], 0, 0)));
    await expect(api.latestTrajectory({ kernel: 'k 1' })).resolves.toBeNull();
    expect(calls[0].url.searchParams.get('kernel')).toBe('k 1');
    expect(calls).toHaveLength(1);
  });

  it('lists the trajectories of a kernel', async () => {
    const { api, calls } = makeApi(() =>
      json(
        200,
        page([trajectory({ id: 'a' }), trajectory({ id: 'b', steps: 0 })], 2, 0)
      )
    );
    const list = await api.listTrajectories({ kernel: 'k' });
    expect(list.map(t => t.id)).toEqual(['a', 'b']);
    expect(calls[0].url.searchParams.get('limit')).toBe('1000');
  });

  it('reads steps and predictions', async () => {
    const { api, calls } = makeApi(call =>
      call.url.pathname.endsWith('/steps')
        ? json(200, {
            trajectory_id: 't1',
            steps: [fullStep(1), fullStep(2)],
            next_since_step: null
          })
        : json(200, { predictions: [prediction('output', 1)] })
    );
    const steps = await api.getSteps('t/1', 0, 100);
    // as the live stream carries them: no outputs, no hash
    expect(steps.steps.map(s => s.step)).toEqual([1, 2]);
    expect(steps.steps[0]).not.toHaveProperty('outputs');
    expect(steps.next_since_step).toBeNull();
    expect(calls[0].url.pathname).toBe(
      '/base/themisto/api/trajectories/t%2F1/steps'
    );
    expect(calls[0].url.searchParams.get('limit')).toBe('100');
    const predictions = await api.getPredictions('t1', 5);
    expect(predictions).toHaveLength(1);
    expect(calls[1].url.searchParams.get('since_step')).toBe('5');
  });

  it('reads one whole prediction, prompt included', async () => {
    const whole = {
      ...prediction('output', 2),
      prompt: { system: 'sys', user: 'usr' },
      raw: 'answer'
    };
    const { api, calls } = makeApi(() => json(200, whole));
    await expect(api.getPrediction('p/1')).resolves.toEqual(whole);
    expect(calls[0].url.pathname).toBe('/base/themisto/api/predictions/p%2F1');
    const missing = makeApi(() =>
      json(404, { message: 'Unknown prediction p/1' })
    ).api;
    await expect(missing.getPrediction('p/1')).rejects.toMatchObject({
      status: 404,
      message: 'Unknown prediction p/1'
    });
  });

  it('posts prediction requests', async () => {
    const { api, calls } = makeApi(() =>
      json(202, {
        accepted: true,
        trajectory_id: 't',
        target_step: 4,
        predictions: 2
      })
    );
    await expect(
      api.requestPrediction({ kernel_id: 'k', task: 'next-cell' })
    ).resolves.toBe(4);
    expect(calls[0].method).toBe('POST');
    expect(calls[0].url.pathname).toBe('/base/themisto/api/predictions');
    expect(JSON.parse(calls[0].body ?? '')).toEqual({
      kernel_id: 'k',
      task: 'next-cell'
    });
  });

  it('posts speculations and reads why one was not started', async () => {
    const { api, calls } = makeApi(() =>
      json(202, {
        accepted: false,
        reason: 'the kernel is running a cell',
        trajectory_id: 't',
        target_step: 5
      })
    );
    await expect(
      api.speculate({ kernel_id: 'k', code: 'df.head()', cell_id: 'c5' })
    ).resolves.toEqual({
      accepted: false,
      reason: 'the kernel is running a cell',
      trajectory_id: 't',
      target_step: 5
    });
    expect(calls[0].method).toBe('POST');
    expect(calls[0].url.pathname).toBe('/base/themisto/api/speculations');
    expect(JSON.parse(calls[0].body ?? '')).toEqual({
      kernel_id: 'k',
      code: 'df.head()',
      cell_id: 'c5'
    });
  });

  it('reads an export with the token in a header, never in the URL', async () => {
    const headers: string[] = [];
    const { api, calls } = makeApi(
      () => new Response('{"step": 1}\n'),
      'secret'
    );
    const fetchSpy = jest.spyOn(api.serverSettings, 'fetch');
    fetchSpy.mockImplementation(async (input, init) => {
      const request = new Request(input as RequestInfo, init);
      headers.push(request.headers.get('Authorization') ?? '');
      calls.push({ url: new URL(request.url), method: 'GET', body: null });
      return new Response('{"step": 1}\n');
    });
    const response = await api.openExport(
      { trajectories: ['a', 'b'] },
      'n.jsonl'
    );
    expect(await response.text()).toBe('{"step": 1}\n');
    const url = calls[0].url;
    expect(url.pathname).toBe('/base/themisto/api/export');
    expect(url.searchParams.getAll('trajectory')).toEqual(['a', 'b']);
    expect(url.searchParams.get('filename')).toBe('n.jsonl');
    expect(url.searchParams.has('token')).toBe(false);
    expect(url.href).not.toContain('secret');
    expect(headers).toEqual(['token secret']);
  });

  it('reads a history page in brief and slim predictions of a window', async () => {
    const { api, calls } = makeApi(({ url }) =>
      url.pathname.endsWith('/history')
        ? json(200, {
            trajectory_id: 't1',
            steps: [
              {
                step: 4,
                cell_id: 'c',
                code_hash: '41f65c6b',
                execution_time: 0.5,
                memory_bytes: 10,
                error: 'NameError',
                predictions: [
                  {
                    id: 'p',
                    task: 'output',
                    predictor: 'baseline',
                    model: null,
                    context: 'full',
                    scores: null,
                    error: {
                      type: 'PredictionSuperseded',
                      message: 'the next cell started first'
                    },
                    abstained: false
                  }
                ]
              }
            ],
            next_since_step: 4
          })
        : json(200, { predictions: [prediction('output', 5)] })
    );
    const page = await api.getHistory('t1', 3, 1);
    expect(page.next_since_step).toBe(4);
    expect(page.steps).toHaveLength(1);
    expect(page.steps[0]).toMatchObject({ step: 4, error: 'NameError' });
    expect(page.steps[0].predictions).toEqual([
      {
        id: 'p',
        task: 'output',
        predictor: 'baseline',
        model: null,
        context: 'full',
        scores: null,
        error: {
          type: 'PredictionSuperseded',
          message: 'the next cell started first'
        },
        abstained: false
      }
    ]);
    expect(calls[0].url.searchParams.get('since_step')).toBe('3');
    expect(calls[0].url.searchParams.get('limit')).toBe('1');
    await api.getPredictions('t1', 4, 6);
    const query = calls[1].url.searchParams;
    expect(query.get('until_step')).toBe('6');
    expect(query.get('slim')).toBe('true');
  });
  it('reads a streamed completion line by line, across chunk ends', async () => {
    const lines = [
      { completion: 'ght', done: false },
      { completion: "ght_kg'] # é", done: false },
      {
        completion: "ght_kg'] # é",
        predictor: 'hybrid',
        reason: null,
        trajectory_id: 't',
        after_step: 1,
        done: true
      }
    ];
    const text = lines.map(line => JSON.stringify(line) + '\n').join('');
    const encoded = new TextEncoder().encode(text);
    // a body read in chunks that cut lines (and a character) anywhere, as
    // a browser's fetch reads one (jsdom has no ReadableStream)
    const chunks: Uint8Array[] = [];
    for (let at = 0; at < encoded.length; at += 7) {
      chunks.push(encoded.slice(at, at + 7));
    }
    const reader = {
      read: async () =>
        chunks.length
          ? { done: false, value: chunks.shift() }
          : { done: true, value: undefined }
    };
    const { client, calls } = makeClient(
      () =>
        ({
          ok: true,
          status: 200,
          body: { getReader: () => reader }
        }) as unknown as Response
    );
    const seen: string[] = [];
    await expect(
      client.completeCell(
        { kernel_id: 'k', beginning: "people['wei" },
        undefined,
        t => seen.push(t)
      )
    ).resolves.toEqual(lines[lines.length - 1]); // the answer: the last line
    expect(seen).toEqual(['ght', "ght_kg'] # é"]);
    expect(JSON.parse(calls[0].body!)).toEqual({
      kernel_id: 'k',
      beginning: "people['wei",
      stream: true
    });
  });

  it('fails a streamed completion that ends without its answer', async () => {
    const { client } = makeClient(
      () =>
        new Response('{"completion": "x", "done": false}\n', {
          status: 200,
          headers: { 'Content-Type': 'application/x-ndjson' }
        })
    );
    await expect(
      client.completeCell(
        { kernel_id: 'k', beginning: 'x' },
        undefined,
        () => undefined
      )
    ).rejects.toThrow('without its answer');
  });
});

/**
 * A page of `GET trajectories`.
 */
function page(trajectories: Trajectory[], total: number, offset: number) {
  return { trajectories, total, limit: 1, offset };
}

describe('exportFilename', () => {
  it('makes a plain .jsonl name from a notebook path', () => {
    expect(exportFilename('dir/My Analysis.ipynb')).toBe('My_Analysis.jsonl');
    expect(exportFilename('.hidden.ipynb')).toBe('hidden.jsonl');
    expect(exportFilename('')).toBe('trajectory.jsonl');
    expect(exportFilename('themisto-class.jsonl')).toBe('themisto-class.jsonl');
  });
});
