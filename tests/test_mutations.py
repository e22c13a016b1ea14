import pytest

from themisto_ext.kernel.mutations import possibly_mutated


@pytest.mark.parametrize("code,expected", [
    ("df.shape", set()),
    ("len(numbers) + 1", set()),
    ("s = arr[:100].sum()", {"s"}),
    ("m = df['c1'].head(3).mean()", {"m"}),
    ("np.mean(arr)", set()),
    ("print(table['k'], nested['g']['k'])", set()),
    ("for row in rows:\n    total += row", {"row", "total"}),
    ("df['a'] = 0", {"df"}),
    ("df.loc[0, 'a'] = 1", {"df"}),
    ("obj.attr = 1", {"obj"}),
    ("del cache['k']", {"cache"}),
    ("arr[0] += 1", {"arr"}),
    ("items.append(1)", {"items"}),
    ("model.layers[0].weights.fill(0)", {"model"}),
    ("df.drop(columns=['a'], inplace=True)", {"df"}),
    ("df.head().fillna(0, inplace=True)", {"df"}),
    ("df.sort_values('a')", {"df"}),  # not on the read-only list: assume the worst
    ("process(data)", {"data"}),
    ("process([data, other])", {"data", "other"}),
    ("process(key=data)", {"data"}),
    ("y = [x, z]", {"y"}),
    ("def f():\n    numbers.append(1)\nf()", {"numbers"}),
    ("(w := compute())", {"w"}),
])
def test_possibly_mutated(code, expected):
    assert possibly_mutated(code) == expected


def test_unparseable_or_magic_code_counts_every_name():
    assert possibly_mutated("!ls $folder") >= {"ls", "folder"}
    magic = "get_ipython().run_line_magic('time', 'df.shape')"
    assert "df" in possibly_mutated("%time df.shape", magic)
