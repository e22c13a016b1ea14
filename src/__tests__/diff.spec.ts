import { diffText, sideText, splitLines } from '../panel/diff';

function check(a: string, b: string, maxCells?: number) {
  const result = diffText(a, b, maxCells);
  expect(sideText(result.segments, 'a')).toBe(a);
  expect(sideText(result.segments, 'b')).toBe(b);
  for (let i = 1; i < result.segments.length; i++) {
    expect(result.segments[i].op).not.toBe(result.segments[i - 1].op);
  }
  return result;
}

describe('diffText', () => {
  it('finds equal texts equal', () => {
    expect(check('same', 'same').segments).toEqual([
      { op: 'equal', text: 'same' }
    ]);
    expect(check('', '').segments).toEqual([]);
  });

  it('marks a changed character', () => {
    expect(check('41.5', '42.5').segments).toEqual([
      { op: 'equal', text: '4' },
      { op: 'delete', text: '1' },
      { op: 'insert', text: '2' },
      { op: 'equal', text: '.5' }
    ]);
  });

  it('aligns on the longest common subsequence', () => {
    const { segments, granularity } = check('abcxdef', 'abdeyf');
    expect(granularity).toBe('char');
    const kept = segments
      .filter(s => s.op === 'equal')
      .map(s => s.text)
      .join('');
    expect(kept).toBe('abdef');
  });

  it('handles an empty side', () => {
    expect(check('', 'new').segments).toEqual([{ op: 'insert', text: 'new' }]);
    expect(check('old', '').segments).toEqual([{ op: 'delete', text: 'old' }]);
  });

  it('never splits a surrogate pair', () => {
    const { segments } = check('a🙂b', 'a🙃b');
    for (const s of segments) {
      expect(s.text).not.toMatch(/^[\udc00-\udfff]|[\ud800-\udbff]$/);
    }
  });

  it('falls back to lines for long texts and refines small changes', () => {
    const lines = Array.from({ length: 300 }, (_, i) => `row ${i} value\n`);
    const a = lines.join('');
    const changed = [...lines];
    changed[100] = 'row 100 VALUE\n';
    changed[200] = 'row 200 other\n';
    const b = changed.join('');
    const result = check(a, b, 20000);
    expect(result.granularity).toBe('line');
    const deleted = result.segments
      .filter(s => s.op === 'delete')
      .map(s => s.text);
    expect(deleted).toContain('value');
  });

  it('gives one replaced block when even lines are too many', () => {
    const a = 'x\n'.repeat(50) + 'a';
    const b = 'y\n'.repeat(50) + 'b';
    const result = check(a, b, 100);
    expect(result.granularity).toBe('block');
  });

  it('is quick on a 200,000-character output', () => {
    const a = 'lorem ipsum\n'.repeat(16000);
    const b = a.replace(/ipsum/g, (m, offset: number) =>
      offset % 7 ? m : 'IPSUM'
    );
    const started = Date.now();
    check(a, b);
    expect(Date.now() - started).toBeLessThan(2000);
  });

  it('agrees with both sides on random texts', () => {
    let seed = 7;
    const random = () => (seed = (seed * 16807) % 2147483647) / 2147483647;
    const text = () =>
      Array.from({ length: Math.floor(random() * 40) }, () =>
        'ab\nc'.charAt(Math.floor(random() * 4))
      ).join('');
    for (let i = 0; i < 200; i++) {
      check(text(), text(), random() < 0.5 ? 10 : undefined);
    }
  });
});

describe('splitLines', () => {
  it('keeps line breaks so lines join back', () => {
    expect(splitLines('a\nb\n\nc')).toEqual(['a\n', 'b\n', '\n', 'c']);
    expect(splitLines('')).toEqual([]);
  });
});
