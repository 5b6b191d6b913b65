// Launcher declarations, included by kernels/launchers.h inside both kernel namespaces (simt_kernels
// and cuda_kernels): deliberately no include guard and no includes. T is float or parbench::bf16;
// statistics, attention probabilities and optimizer state are float; `stream` is a cudaStream_t or null.

// Embedding: out (B,T,C) = wte[inp] + wpe[t]; backward accumulates into dwte (V,C) and dwpe (T,C).
template <class T>
void encoder_forward(T* out, const std::int32_t* inp, const T* wte, const T* wpe, int B, int T_, int C, void* stream);
template <class T>
void encoder_backward(T* dwte, T* dwpe, const T* dout, const std::int32_t* inp, int B, int T_, int C, void* stream);
// Vocabulary shard (tensor parallelism): wte/dwte (Vs,C) hold rows [vocab_begin, vocab_begin + Vs) of the
// table and tokens outside contribute nothing; wpe / dwpe may be null (position embedding left out).
template <class T>
void encoder_forward_shard(T* out, const std::int32_t* inp, const T* wte, const T* wpe, int B, int T_, int C, int Vs,
                           std::int64_t vocab_begin, void* stream);
template <class T>
void encoder_backward_shard(T* dwte, T* dwpe, const T* dout, const std::int32_t* inp, int B, int T_, int C, int Vs,
                            std::int64_t vocab_begin, void* stream);

// Matmul versions, numbered as in the benchmark: 1 naive, 2 shared-memory tiled, 3 register-blocked 2D
// tiles with 16-byte loads, 4 tensor cores through WMMA (bf16 in, fp32 accumulate; fp32 storage is
// rounded to bf16 on the way in). 0 picks the default (3 for fp32, 4 for bf16).
inline constexpr int kMatmulVersions = 4;
template <class T>
void matmul_forward(T* out, const T* inp, const T* weight, const T* bias, int BT, int C, int OC, int version,
                    void* stream);
// dinp (BT,C), dweight (OC,C), dbias (OC) may be null; accumulate adds instead of overwriting.
template <class T>
void matmul_backward(T* dinp, T* dweight, T* dbias, const T* dout, const T* inp, const T* weight, int BT, int C, int OC,
                     bool accumulate, void* stream);
// out (BT,OC) += bias: the cuBLAS baseline's epilogue.
template <class T>
void add_bias(T* out, const T* bias, int BT, int OC, void* stream);

template <class T>
void gelu_forward(T* out, const T* inp, std::int64_t n, void* stream);
template <class T>
void gelu_backward(T* dinp, const T* inp, const T* dout, std::int64_t n, void* stream);
template <class T>
void bias_gelu_forward(T* out, const T* inp, const T* bias, int N, int C, void* stream);
template <class T>
void bias_gelu_backward(T* dinp, T* dbias, const T* inp, const T* bias, const T* dout, int N, int C, void* stream);

template <class T>
void layernorm_forward(T* out, float* mean, float* rstd, const T* inp, const T* weight, const T* bias, int N, int C,
                       void* stream);
template <class T>
void layernorm_backward(T* dinp, T* dweight, T* dbias, const T* dout, const T* inp, const T* weight, const float* mean,
                        const float* rstd, int N, int C, void* stream);

template <class T>
void residual_forward(T* out, const T* a, const T* b, std::int64_t n, void* stream);
template <class T>
void residual_backward(T* da, T* db, const T* dout, std::int64_t n, void* stream);

// Plain attention: att (B,NH,T,T) keeps the probabilities; the backward needs a (B,NH,T,T) scratch.
template <class T>
void attention_forward(T* out, float* att, const T* inp, int B, int T_, int C, int NH, void* stream);
template <class T>
void attention_backward(T* dinp, float* scratch, const T* dout, const T* inp, const float* att, int B, int T_, int C,
                        int NH, void* stream);
// Flash-style attention: lse (B,NH,T); the backward needs a (B,NH,T) scratch. Head size C/NH <= 128.
inline constexpr int kFlashMaxHeadSize = 128;
template <class T>
void flash_attention_forward(T* out, float* lse, const T* inp, int B, int T_, int C, int NH, void* stream);
template <class T>
void flash_attention_backward(T* dinp, float* scratch, const T* dout, const T* inp, const T* out, const float* lse,
                              int B, int T_, int C, int NH, void* stream);

template <class T>
void crossentropy_forward_backward(float* losses, T* dlogits, const T* logits, const std::int32_t* targets, int N,
                                   int V, float dloss, void* stream);
// Vocabulary-parallel cross-entropy over logits (N,Vs), the columns [vocab_begin, vocab_begin + Vs) of (N,V);
// targets are global ids. Between the calls the caller combines row_max (max) and sumexp, target_logit (sum).
template <class T>
void crossentropy_shard_max(float* row_max, const T* logits, int N, int Vs, void* stream);
template <class T>
void crossentropy_shard_sums(float* sumexp, float* target_logit, const T* logits, const std::int32_t* targets,
                             const float* row_max, int N, int Vs, std::int64_t vocab_begin, void* stream);
template <class T>
void crossentropy_shard_finish(float* losses, T* dlogits, const T* logits, const std::int32_t* targets,
                               const float* row_max, const float* sumexp, const float* target_logit, int N, int Vs,
                               std::int64_t vocab_begin, float dloss, void* stream);

template <class T>
void adamw_update(T* params, const T* grads, float* m, float* v, std::int64_t n, float lr, float beta1, float beta2,
                  float eps, float weight_decay, int step, void* stream);
template <class T>
void sgd_update(T* params, const T* grads, std::int64_t n, float lr, float weight_decay, void* stream);
template <class T>
void norm_squared(float* out, const T* x, std::int64_t n, bool accumulate, void* stream);
template <class T>
void clip_by_norm(T* x, std::int64_t n, const float* norm_sq, float max_norm, void* stream);
template <class T>
void mse_forward(float* loss, const T* pred, const T* target, std::int64_t n, void* stream);
template <class T>
void mse_backward(T* dpred, const T* pred, const T* target, std::int64_t n, float dloss, void* stream);

void convert(::parbench::bf16* out, const float* inp, std::int64_t n, void* stream);
void convert(float* out, const ::parbench::bf16* inp, std::int64_t n, void* stream);
