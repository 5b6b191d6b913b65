# Shared by the bench_*_vs_mpi.sh summaries (prepended to their awk programs, so any awk reads it): the median of
# a space-separated list of numbers, and a byte count as the size name the tables show.
function median(list,   v, k, i, j, t) {
  k = split(list, v, " ")
  for (i = 2; i <= k; i++) for (j = i; j > 1 && v[j - 1] + 0 > v[j] + 0; j--) { t = v[j]; v[j] = v[j - 1]; v[j - 1] = t }
  return k % 2 ? v[(k + 1) / 2] : (v[k / 2] + v[k / 2 + 1]) / 2
}
function size_name(b) { return b >= 1048576 ? b / 1048576 " MiB" : b >= 1024 ? b / 1024 " KiB" : b " B" }
