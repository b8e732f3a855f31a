// Estimates from byte-based Poisson sampling (memleak --sample-bytes N, bpf/memleak.bpf.c). An
// allocation of s bytes is recorded with probability p = 1 - exp(-s/N) (the chance that a Poisson
// process with one point per N bytes on average puts a point inside it). Each recorded one stands
// for 1/p allocations and s/p bytes (Horvitz-Thompson: unbiased whatever the sizes), the weighting
// tcmalloc and Go's heap profiler use; the variance of that sum is estimated by
// Σ (1-p)/p² · s² over the recorded allocations, whose square root is the standard error shown.

/** Probability that an allocation of `size` bytes is recorded at mean interval `meanBytes`. */
export function sampleProbability(size: number, meanBytes: number): number {
  if (meanBytes <= 0) return 1;
  return -Math.expm1(-size / meanBytes);
}

/** Running estimate for one group (stack or site) of sampled allocations. */
export class SampledTotals {
  bytes = 0;
  allocations = 0;
  private bytesVar = 0;
  private countVar = 0;

  add(size: number, meanBytes: number): void {
    const p = sampleProbability(size, meanBytes);
    if (p <= 0) return; // size 0 is never sampled
    const q = (1 - p) / (p * p);
    this.bytes += size / p;
    this.allocations += 1 / p;
    this.bytesVar += q * size * size;
    this.countVar += q;
  }

  get bytesStdErr(): number {
    return Math.sqrt(this.bytesVar);
  }

  get allocationsStdErr(): number {
    return Math.sqrt(this.countVar);
  }
}

/** Independent groups (different stacks) add up: their standard errors combine in quadrature. */
export function combineStdErr(errors: (number | undefined)[]): number | undefined {
  const known = errors.filter((e): e is number => e !== undefined);
  return known.length ? Math.sqrt(known.reduce((a, e) => a + e * e, 0)) : undefined;
}

/** "≈1.2 MB ± 40 KB" style suffix parts, or '' for exact figures. */
export function plusMinus(stdErr: number | undefined, format: (n: number) => string): string {
  return stdErr === undefined ? '' : ` ± ${format(stdErr)}`;
}
