/** A duration as a clock shows it, minutes and seconds (1:05): elapsed times and ETAs. */
export function clockText(ms: number): string {
  const s = Math.round(ms / 1000);
  return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, '0')}`;
}
