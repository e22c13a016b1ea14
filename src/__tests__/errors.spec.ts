import {
  apiErrorFromResponse,
  errorMessageFromBody,
  ThemistoApiError
} from '../api/errors';

describe('errorMessageFromBody', () => {
  it('uses the JSON message', () => {
    expect(
      errorMessageFromBody(404, 'Not Found', '{"message": "Unknown kernel"}')
    ).toBe('Unknown kernel');
  });

  it('falls back to the status text for non-JSON bodies', () => {
    expect(errorMessageFromBody(500, 'Internal Server Error', '<html>')).toBe(
      'Internal Server Error'
    );
  });

  it('falls back when message is missing or not a string', () => {
    expect(errorMessageFromBody(400, 'Bad Request', '{"reason": "x"}')).toBe(
      'Bad Request'
    );
    expect(errorMessageFromBody(400, '', '{"message": 3}')).toBe(
      'Request failed with status 400'
    );
    expect(errorMessageFromBody(400, '', '["message"]')).toBe(
      'Request failed with status 400'
    );
  });

  it('handles an empty body', () => {
    expect(errorMessageFromBody(403, 'Forbidden', '')).toBe('Forbidden');
    expect(errorMessageFromBody(502, '', '  ')).toBe(
      'Request failed with status 502'
    );
  });
});

describe('apiErrorFromResponse', () => {
  it('builds a typed error', () => {
    const error = apiErrorFromResponse(409, 'Conflict', '{"message":"busy"}');
    expect(error).toBeInstanceOf(ThemistoApiError);
    expect(error).toBeInstanceOf(Error);
    expect(error.name).toBe('ThemistoApiError');
    expect(error.status).toBe(409);
    expect(error.message).toBe('busy');
  });
});
