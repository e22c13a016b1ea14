/**
 * Sorted arrays of step numbers, kept in order as steps arrive (usually
 * increasing, sometimes late: history read newest first).
 *
 * This module is pure: it has no JupyterLab dependency so it can be unit tested.
 */

/**
 * Insert a number into a sorted array unless present; appends in O(1) in
 * the usual case of increasing numbers.
 */
export function insertSorted(sorted: number[], value: number): boolean {
  let lo = 0;
  let hi = sorted.length;
  if (hi === 0 || sorted[hi - 1] < value) {
    sorted.push(value);
    return true;
  }
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (sorted[mid] < value) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  if (sorted[lo] === value) {
    return false;
  }
  sorted.splice(lo, 0, value);
  return true;
}

/**
 * Drop the smallest values beyond `limit`; returns them.
 */
export function trimFront(sorted: number[], limit: number): number[] {
  return sorted.length > limit ? sorted.splice(0, sorted.length - limit) : [];
}
