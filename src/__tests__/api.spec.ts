import { ServerConnection } from '@jupyterlab/services';

import { ThemistoApiError, ThemistoClient } from '../api';

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
