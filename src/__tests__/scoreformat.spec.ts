import {
  formatBytes,
  formatScore,
  formatScores,
  formatSeconds,
  scoreMeaning,
  ScoreMeans
} from '../live/scoreformat';
import { nullTranslator } from '@jupyterlab/translation';

describe('score formatting', () => {
  it('formats scores with two decimals', () => {
    expect(formatScore(0.8333)).toBe('0.83');
    expect(formatScore(1)).toBe('1.00');
    expect(formatScore(1.2)).toBe('1.00');
    expect(formatScore(null)).toBe('—');
    expect(formatScore(NaN)).toBe('—');
  });

  it('formats the three scores in order', () => {
    expect(formatScores({ exact_match: 0, rouge_l: 0.5, chrf: 0.25 })).toBe(
      'EM 0.00 · ROUGE-L 0.50 · ChrF 0.25'
    );
    expect(formatScores(null)).toBe('EM — · ROUGE-L — · ChrF —');
  });

  it('says what each score measures in words, not only its abbreviation', () => {
    const trans = nullTranslator.load('themisto_ext');
    expect(scoreMeaning('exact_match', trans)).toBe('exact match');
    expect(scoreMeaning('rouge_l', trans)).toBe('word overlap (ROUGE-L)');
    expect(scoreMeaning('chrf', trans)).toBe('character overlap (chrF)');
  });

  it('formats durations and sizes', () => {
    expect(formatSeconds(0.0123)).toBe('12 ms');
    expect(formatSeconds(1.5)).toBe('1.50 s');
    expect(formatSeconds(125)).toBe('2 min 5 s');
    expect(formatSeconds(null)).toBe('—');
    expect(formatBytes(512)).toBe('512 B');
    expect(formatBytes(1536)).toBe('1.50 KiB');
    expect(formatBytes(98 * 1024 * 1024)).toBe('98.0 MiB');
    expect(formatBytes(null)).toBe('—');
  });
});

describe('ScoreMeans', () => {
  it('keeps running means', () => {
    const means = new ScoreMeans();
    expect(means.mean()).toBeNull();
    means.add({ exact_match: 1, rouge_l: 1, chrf: 1 });
    means.add({ exact_match: 0, rouge_l: 0.5, chrf: 0 });
    expect(means.count).toBe(2);
    expect(means.mean()).toEqual({
      exact_match: 0.5,
      rouge_l: 0.75,
      chrf: 0.5
    });
  });
});
