# The kernel half of scripts/calibrate.sh: the op table (bench_kernels --list-ops: each row's cost role, the GEMM's
# inner dimension k and how often a block runs it; the op names come from there) and then bench_kernels --device
# cpu --benchmark_format=csv rows (f32) at several shapes in, the system file's matmul and elementwise figures out,
# as one line of shell assignments:
#   overhead_us=.. peak_flops=.. matrix_curve='[[..]]' matrix_by_k='{..}' peak_bytes=.. hbm_curve='[[..]]'
#   gelu_bytes=.. optimizer_bytes=.. measured_linears='[..]'
# -v overhead_shape=NAME names the shape (B1_T1_C4_NH1_V4 style) whose ops do almost no work: the median time of its
# rows is the fixed cost of one op (op_overhead_us). -v time_column=cpu_time reads that column instead of
# real_time. -v depth_shapes='NAME ...' names shapes whose forward and input-gradient matmul rows serve the curves
# by k alone (a sweep of C, for more values of k); they need no other rows. Every other shape gives one point of
# each curve:
# - matrix (by GFLOP): a block's weight matmuls as a training step runs them, the forward of qkv, fc and fc
#   projection and each one's backward (input and weight gradients, twice the forward's FLOPs) at the rate of the
#   fc's matmul_backward_input_fc and matmul_backward_weight_fc rows together: the FLOPs over the time, placed at
#   the mean forward weight matmul's GFLOP. Attention stays out: the cost model times its batched matmuls by their
#   own (smaller) size on this curve, so a rate that blended attention in would count its speed twice;
# - elementwise: the bytes the cost model counts for a block's layernorms and residual adds, forward and backward
#   (33 x the (B, T, C) activation's bytes, predict/README.md), over the time of the ops that do that work
#   (layernorm forward and backward twice each, residual forward twice), placed at the mean bytes of one such op
#   (11/3 x the activation);
# - GeLU: the bytes the cost model counts for a block's bias + GeLU, forward and backward (24 x the activation: the
#   (B, T, 4C) input read and output written, twice that backward), over the gelu_forward and gelu_backward rows'
#   time; gelu_bytes is the median over the shapes (the cpu's GeLU is bound by its tanh, not by its bytes);
# - optimizer: the adamw_update row's bytes over its time; optimizer_bytes is the median over the shapes (the row
#   updates one block's parameters, 12 C^2, whatever B and T).
# The curves by k (the reference loops' rate follows a GEMM's inner dimension k and its kind, not its FLOPs), each
# point the median rate of the rows at one k, the depth shapes' rows included: forward from the forward rows (k = C
# for qkv and fc, 4C for fc projection); input_gradient from the matmul_backward_input_fc rows (k = 4C);
# weight_gradient from the matmul_backward_weight_fc rows (k = B x T; not the depth shapes': the weight gradient's
# rate depends on its strides, so only the model's own widths count).
# Which rows feed which figure is the table's cost column; the names above are the rows of each role today.
# The linear rows (kind linear in the listing: bench_kernels --linear's forward, input and weight gradient) come out as
# measured_linears='[{"tokens": .., "in": .., "out": .., "dtype": "f32", "forward_us": .., ...}, ...]', the system file's
# measured linears ('[]' without such rows).
# Each op's fixed cost is taken off its time first (the predictor adds it back per op). Each curve is the rates
# over the best one (of the matrix curves together), with thresholds halfway (in log size) between neighbouring
# sizes: an op takes the nearest measured size's efficiency.
BEGIN {
  FS = ","
  n_depth = split(depth_shapes, d_list, " ")
  for (i = 1; i <= n_depth; i++) depth_only[d_list[i]] = 1
}
# The op table: name,kind,backward,forward_of,cost,k,per_block; the rows each curve expects per shape.
FNR == NR {
  if (FNR == 1) next
  role[$1] = $5; k_of_op[$1] = $6; per_block[$1] = $7 + 0; versions[$1] = $2 == "matmul_versions"
  linear_part[$1] = $2 == "linear" ? $5 : ""
  if ($2 != "linear") want[$5]++
  next
}
FNR == 1 {
  for (i = 1; i <= NF; i++) { h = $i; gsub(/"/, "", h); col[h] = i }
  next
}
{
  name = $1; gsub(/"/, "", name)
  n = split(name, part, "/")
  op = part[1]; dtype = ""; shape = ""
  for (i = 2; i < n; i++) if (part[i] == "f32") { dtype = part[i]; shape = part[i + 1] }
  if (dtype != "f32" || $col["error_occurred"] == "true") next
  unit = $col["time_unit"]
  scale = unit == "ns" ? 1e-9 : unit == "us" ? 1e-6 : unit == "ms" ? 1e-3 : 1
  real = $col["real_time"] * scale  # the rate counters are per real time
  t = $col[time_column == "" ? "real_time" : time_column] * scale
  if (!(t > 0) || !(real > 0)) next
  r = linear_part[op] != "" ? "" : role[op]
  if (r == "matrix_forward") {
    if (versions[op] && part[2] != "reference") next
    fwd_flops[shape] += $col["FLOP/s"] * real; fwd_time[shape] += t; fwd_ops[shape]++
    sample("forward", k_dim(k_of_op[op], shape), $col["FLOP/s"] * real, t, shape)
  } else if (r == "input_gradient" || r == "weight_gradient") {
    bwd_flops[shape] += $col["FLOP/s"] * real; bwd_time[shape] += t; bwd_ops[shape]++
    if (r == "input_gradient" || !(shape in depth_only)) sample(r, k_dim(k_of_op[op], shape), $col["FLOP/s"] * real, t, shape)
  } else if (linear_part[op] != "") {
    if (!(shape in linear_parts)) linear_names[++n_linears] = shape
    linear_time[shape, linear_part[op]] = t; linear_parts[shape]++
    next
  } else if (r == "elementwise") {
    ew_time[shape] += per_block[op] * t; ew_ops[shape] += per_block[op]
  } else if (r == "gelu") {
    gelu_time[shape] += t; gelu_ops[shape]++
  } else if (r == "optimizer") {
    opt_bytes[shape] = $col["bytes/s"] * real; opt_time[shape] = t
  } else next
  all_time[shape, ++rows[shape]] = t
  shapes[shape] = 1
}
# One row's point for a curve by k: its kind, k, FLOPs, time and shape.
function sample(kind, k, flops, t, shape) {
  k_kind[++nk] = kind; k_of[nk] = k; k_flops[nk] = flops; k_time[nk] = t; k_shape[nk] = shape
}
# Time t of `calls` ops less their fixed cost (ovh each), or t itself where that would leave nothing.
# A GEMM's inner dimension from the table's k ("C", "4C", "BT") at a shape.
function k_dim(k, s,    m, n, i) {
  m = k + 0; if (m == 0) m = 1
  sub(/^[0-9]+/, "", k); n = 1
  for (i = 1; i <= length(k); i++) n *= dim(s, substr(k, i, 1))
  return m * n
}
function net(t, calls) { return t - calls * ovh > 0 ? t - calls * ovh : t }
function median(v, m,    i, j, tmp) {  # of v[1..m]; sorts v
  for (i = 2; i <= m; i++) for (j = i; j > 1 && v[j - 1] > v[j]; j--) { tmp = v[j]; v[j] = v[j - 1]; v[j - 1] = tmp }
  return m % 2 ? v[(m + 1) / 2] : (v[m / 2] + v[m / 2 + 1]) / 2
}
function median_time(s,    k, v) {
  for (k = 1; k <= rows[s]; k++) v[k] = all_time[s, k]
  return median(v, rows[s])
}
function dim(s, key,    d, k) {  # dim("B2_T32_C64_NH4_V256", "T") = 32
  split(s, d, "_")
  for (k in d) if (substr(d[k], 1, 1) == key) return substr(d[k], 2) + 0
  return 0
}
# The median rate at each size: from sizes key[1..n] and rates val[1..n] into sz[] and rt[]; returns their count.
function median_by(n, key, val, sz, rt,    i, j, m, seen, v, c) {
  m = 0
  for (i = 1; i <= n; i++) {
    if (key[i] in seen) continue
    seen[key[i]] = 1; c = 0
    for (j = i; j <= n; j++) if (key[j] == key[i]) v[++c] = val[j]
    sz[++m] = key[i]; rt[m] = median(v, c)
  }
  return m
}
# Sorts the n sizes in sz[] (with their rates in rt[]) descending and prints the curve, rates over `peak`.
function curve(n, sz, rt, peak,    i, j, tmp, out, thr) {
  for (i = 2; i <= n; i++)
    for (j = i; j > 1 && sz[j - 1] < sz[j]; j--) {
      tmp = sz[j]; sz[j] = sz[j - 1]; sz[j - 1] = tmp; tmp = rt[j]; rt[j] = rt[j - 1]; rt[j - 1] = tmp
    }
  out = "["
  for (i = 1; i <= n; i++) {
    thr = i < n ? sqrt(sz[i] * sz[i + 1]) : 0
    out = out (i > 1 ? ", " : "") sprintf("[%.6g, %.4f]", thr, rt[i] / peak)
  }
  return out "]"
}
END {
  if (!(overhead_shape in shapes)) { print "calibrate_kernels.awk: no rows at the shape " overhead_shape > "/dev/stderr"; exit 1 }
  ovh = median_time(overhead_shape)
  ew_want = 0
  for (o in role) if (role[o] == "elementwise") ew_want += per_block[o]
  nm = 0; ne = 0; pm = 0; pe = 0
  for (s in shapes) {
    if (s == overhead_shape || (s in depth_only)) continue
    if (fwd_ops[s] != want["matrix_forward"] || bwd_ops[s] != want["input_gradient"] + want["weight_gradient"] ||
        ew_ops[s] != ew_want || gelu_ops[s] != want["gelu"] || !(s in opt_time)) {
      print "calibrate_kernels.awk: shape " s " lacks matmul, elementwise, GeLU or optimizer rows" > "/dev/stderr"; exit 1
    }
    ff = fwd_flops[s]; bwd_rate = bwd_flops[s] / net(bwd_time[s], bwd_ops[s])
    msz[++nm] = ff / fwd_ops[s] / 1e9; mrt[nm] = 3 * ff / (net(fwd_time[s], fwd_ops[s]) + 2 * ff / bwd_rate)
    if (mrt[nm] > pm) pm = mrt[nm]
    a = dim(s, "B") * dim(s, "T") * dim(s, "C") * 4
    esz[++ne] = 11 / 3 * a; ert[ne] = 33 * a / net(ew_time[s], ew_ops[s])
    if (ert[ne] > pe) pe = ert[ne]
    grt[ne] = 24 * a / net(gelu_time[s], gelu_ops[s])
    ort[ne] = opt_bytes[s] / net(opt_time[s], 1)
  }
  if (nm == 0) { print "calibrate_kernels.awk: no shape besides the overhead shape" > "/dev/stderr"; exit 1 }
  split("forward input_gradient weight_gradient", kinds, " ")
  for (c = 1; c <= 3; c++) {
    nr = 0
    for (i = 1; i <= nk; i++) {
      if (k_kind[i] != kinds[c] || k_shape[i] == overhead_shape) continue
      r_k[++nr] = k_of[i]; r_rate[nr] = k_flops[i] / net(k_time[i], 1)
    }
    if (nr == 0) { print "calibrate_kernels.awk: no " kinds[c] " matmul rows for the curves by k" > "/dev/stderr"; exit 1 }
    kn[c] = median_by(nr, r_k, r_rate, ksz, krt)
    for (i = 1; i <= kn[c]; i++) { by_k_size[c, i] = ksz[i]; by_k_rate[c, i] = krt[i]; if (krt[i] > pm) pm = krt[i] }
  }
  by_k = "{"
  for (c = 1; c <= 3; c++) {
    for (i = 1; i <= kn[c]; i++) { ksz[i] = by_k_size[c, i]; krt[i] = by_k_rate[c, i] }
    by_k = by_k (c > 1 ? ", " : "") "\"" kinds[c] "\": " curve(kn[c], ksz, krt, pm)
  }
  printf "overhead_us=%.4g peak_flops=%.6g matrix_curve='%s' matrix_by_k='%s}' peak_bytes=%.6g hbm_curve='%s' gelu_bytes=%.6g optimizer_bytes=%.6g measured_linears='%s'\n",
         ovh * 1e6, pm, curve(nm, msz, mrt, pm), by_k, pe, curve(ne, esz, ert, pe), median(grt, ne), median(ort, ne),
         linears_json()
}
# The --linear rows as the system file's gpu.linears, in the order they came, each time less the fixed cost.
function linears_json(    i, k, s, out, p) {
  out = "["
  for (i = 1; i <= n_linears; i++) {
    s = linear_names[i]
    if (linear_parts[s] != 3) {
      print "calibrate_kernels.awk: linear " s " lacks its forward, input or weight gradient row" > "/dev/stderr"; exit 1
    }
    out = out (i > 1 ? ", " : "") sprintf("{\"tokens\": %d, \"in\": %d, \"out\": %d, \"dtype\": \"f32\"", dim(s, "T"), dim(s, "I"), dim(s, "O"))
    split("forward input_gradient weight_gradient", p, " ")
    for (k = 1; k <= 3; k++) out = out sprintf(", \"%s_us\": %.6g", p[k], net(linear_time[s, p[k]], 1) * 1e6)
    out = out "}"
  }
  return out "]"
}
