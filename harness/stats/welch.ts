/**
 * Welch's two-sample t-test (unequal variances) and the Student-t tail it needs for the fractional
 * degrees of freedom Welch–Satterthwaite gives. between-runs.ts's series is exact for integer df only.
 */
import { gammaln, mean, sampleVariance } from 'simple-statistics';

/** Continued-fraction iterations and the relative precision at which they stop (Numerical Recipes' betacf). */
const MAX_ITERATIONS = 300;
const EPSILON = 1e-15;
const TINY = 1e-300;

/** The continued fraction of I_x(a, b) by the modified Lentz method (Numerical Recipes, 3rd ed., §6.4). */
function betaFraction(a: number, b: number, x: number): number {
  const qab = a + b;
  const qap = a + 1;
  const qam = a - 1;
  // Stryker disable next-line ConditionalExpression,EqualityOperator: Lentz's guard; none fired scanning Student's t, df 0.5–1e6
  const clamp = (v: number) => (Math.abs(v) < TINY ? TINY : v);
  let c = 1;
  let d = 1 / clamp(1 - (qab * x) / qap);
  let h = d;
  // Stryker disable next-line EqualityOperator: not reached: Student's t (b = ½) converges in ≤ 60 iterations up to df 1e6
  for (let m = 1; m <= MAX_ITERATIONS; m++) {
    const m2 = 2 * m;
    const even = (m * (b - m) * x) / ((qam + m2) * (a + m2));
    d = 1 / clamp(1 + even * d);
    c = clamp(1 + even / c);
    h *= d * c;
    const odd = (-(a + m) * (qab + m) * x) / ((a + m2) * (qap + m2));
    d = 1 / clamp(1 + odd * d);
    c = clamp(1 + odd / c);
    const step = d * c;
    h *= step;
    // Stryker disable next-line ConditionalExpression,EqualityOperator,ArithmeticOperator: a stop for speed; going on moves p < 1e-9
    if (Math.abs(step - 1) < EPSILON) return h;
  }
  return h;
}

/** The regularized incomplete beta function I_x(a, b), for a, b > 0 and x in [0, 1]. */
export function regularizedIncompleteBeta(x: number, a: number, b: number): number {
  if (!(a > 0 && b > 0)) throw new RangeError(`the beta function needs a, b > 0, got ${a}, ${b}`);
  if (!(x >= 0 && x <= 1)) throw new RangeError(`I_x(a, b) needs x in [0, 1], got ${x}`);
  // x = 0 and x = 1 need no case of their own: there `front` is exp(−∞) = 0, giving 0 and 1.
  const front = Math.exp(gammaln(a + b) - gammaln(a) - gammaln(b) + a * Math.log(x) + b * Math.log1p(-x));
  // The fraction converges fast only below the mean; above it, by the symmetry I_x(a, b) = 1 − I_{1−x}(b, a).
  // Stryker disable next-line EqualityOperator: at the switch itself both fractions converge to the same value
  return x < (a + 1) / (a + b + 2) ? (front * betaFraction(a, b, x)) / a : 1 - (front * betaFraction(b, a, 1 - x)) / b;
}

/** P(|T| ≥ |t|) for Student's t with `df` > 0 degrees of freedom (fractional allowed): I_{df/(df+t²)}(df/2, 1/2). */
export function studentTTwoSidedP(t: number, df: number): number {
  if (!(df > 0)) throw new RangeError(`degrees of freedom must be positive, got ${df}`);
  if (Number.isNaN(t)) throw new RangeError('the t statistic is NaN');
  // An infinite t gives x = df / (df + ∞) = 0, and I_0 = 0.
  return regularizedIncompleteBeta(df / (df + t * t), df / 2, 0.5);
}

/** Welch's test of mean(b) − mean(a). */
export interface WelchTest {
  /** mean(b) − mean(a). */
  difference: number;
  /** Its standard error, √(var a / n_a + var b / n_b). */
  standardError: number;
  t: number;
  /** Welch–Satterthwaite degrees of freedom (fractional). */
  df: number;
  /** Two-sided p-value. */
  p: number;
}

/**
 * Welch's two-sided t-test of equal means, each sample of at least 2 values. Two samples without any
 * spread have t = ±∞ (p = 0) when their means differ, and p = 1 when they are equal.
 */
export function welchTest(a: readonly number[], b: readonly number[]): WelchTest {
  if (a.length < 2 || b.length < 2)
    throw new RangeError(`Welch's test needs 2 values a sample, got ${a.length} and ${b.length}`);
  const difference = mean([...b]) - mean([...a]);
  const va = sampleVariance([...a]) / a.length;
  const vb = sampleVariance([...b]) / b.length;
  const standardError = Math.sqrt(va + vb);
  if (standardError === 0) {
    const p = difference === 0 ? 1 : 0;
    return {
      difference,
      standardError,
      t: difference === 0 ? 0 : Math.sign(difference) * Infinity,
      df: a.length + b.length - 2,
      p,
    };
  }
  const t = difference / standardError;
  const df = (va + vb) ** 2 / (va ** 2 / (a.length - 1) + vb ** 2 / (b.length - 1));
  return { difference, standardError, t, df, p: studentTTwoSidedP(t, df) };
}
