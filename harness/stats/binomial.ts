/**
 * The binomial distribution behind every count-based claim: the order-statistic interval of a median
 * (p = ½ over rounds), a quantile's interval over requests, and "p99 within a target" at 95%.
 */

/**
 * P(B ≤ k) for B ~ Binomial(n, p), for each k = 0 … kMax (capped at 1). The terms come from the
 * recurrence P(k) = P(k − 1)·(n − k + 1)/k·p/(1 − p): in plain numbers while P(0) = (1 − p)^n is a
 * normal float (exact for p = ½ at a few rounds, which the interval's stated coverage needs), in logs
 * where it would underflow (hundreds of thousands of requests).
 */
export function binomialCdf(n: number, p: number, kMax: number): number[] {
  const odds = p / (1 - p);
  const first = (1 - p) ** n;
  const out: number[] = [];
  let sum = 0;
  // Stryker disable next-line EqualityOperator: at (1 − p)^n = MIN_NORMAL exactly both branches agree to rounding
  if (first >= MIN_NORMAL) {
    let term = first;
    sum = term;
    out.push(Math.min(1, sum));
    for (let k = 1; k <= kMax; k++) {
      term = ((term * (n - k + 1)) / k) * odds;
      sum += term;
      out.push(Math.min(1, sum));
    }
    return out;
  }
  let logTerm = n * Math.log1p(-p);
  sum = Math.exp(logTerm);
  out.push(Math.min(1, sum));
  for (let k = 1; k <= kMax; k++) {
    logTerm += Math.log((n - k + 1) / k) + Math.log(odds);
    sum += Math.exp(logTerm);
    out.push(Math.min(1, sum));
  }
  return out;
}

/** The least positive normal double: below it a float loses precision. */
const MIN_NORMAL = 2 ** -1022;
