import schema from '../../schema/predictions.json';
import { withServerChoices } from '../settingschema';
import { predictorsInfo } from './fixtures';

const info = predictorsInfo({
  predictors: ['baseline', 'hybrid'],
  contexts: ['none', 'full']
});

describe('withServerChoices', () => {
  it("offers the server's predictors and contexts as choices", () => {
    const shown = withServerChoices(schema, info);
    expect(shown.properties.predictors.items).toEqual({
      type: 'string',
      enum: ['baseline', 'hybrid']
    });
    expect(shown.properties.contexts.items.enum).toEqual(['none', 'full']);
    // Titles and descriptions stay, once each; the file's schema is untouched.
    expect(shown.properties.predictors.title).toBe('Predictors to show');
    expect(shown.properties.contexts.title).toBe('Contexts to show');
    expect(schema.properties.predictors.items).toHaveProperty('pattern');
  });

  it('keeps a value chosen before selectable, and the open form without a server list', () => {
    const shown = withServerChoices(schema, info, {
      predictors: ['openai:gpt-4o-mini']
    });
    expect(shown.properties.predictors.items.enum).toEqual([
      'baseline',
      'hybrid',
      'openai:gpt-4o-mini'
    ]);
    const none = withServerChoices(schema, {
      ...info,
      predictors: [],
      contexts: []
    });
    expect(none.properties.predictors.items).toHaveProperty('pattern');
  });
});
