//! The encoder's matrix products: rows of activations times a weight packed once, when the
//! model loads, into the layout the product reads.
//!
//! A request embeds some ten tokens, so its products are ten rows by a 384 × 1,536 weight:
//! far too few rows for a general matrix multiply to pay back its repacking of the weight,
//! which it does on every call. Here the weight is packed at load into panels of
//! `columns` output columns, each panel the whole inner dimension long, and a tile of
//! `rows × columns` accumulators stays in registers while a panel streams past once. The
//! tile is sized to the vector unit found at run time: 12 × 32 with AVX-512, 6 × 16 with
//! AVX2 and FMA, 4 × 8 elsewhere (any target: plain Rust the compiler vectorises).
//!
//! The x86 kernels can also hold a weight as halves (binary16), converted to singles in
//! registers as each step of the panel is read: a request's products stream half the bytes
//! (its embedding 1.10–1.12 × faster at the median in the bench `search`), for weights
//! rounded to 11 significant bits.

use std::ops::Range;

/// The vector unit the products are compiled for, found once at load.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kernel {
    /// x86-64 with AVX-512F: tiles of 12 rows by 32 columns.
    #[cfg(target_arch = "x86_64")]
    Avx512,
    /// x86-64 with AVX2 and FMA: 6 by 16.
    #[cfg(target_arch = "x86_64")]
    Avx2,
    /// Any other CPU: 4 by 8, the compiler's own vectorising of the target's baseline.
    Portable,
}

impl Kernel {
    /// The best kernel this CPU runs (std caches what it finds: cheap to ask per call).
    pub(super) fn detect() -> Kernel {
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx512f") {
                return Kernel::Avx512;
            }
            if std::arch::is_x86_feature_detected!("avx2")
                && std::arch::is_x86_feature_detected!("fma")
            {
                return Kernel::Avx2;
            }
        }
        Kernel::Portable
    }

    /// Whether the kernel reads weights held as halves (its vector unit converts them: AVX-512,
    /// or AVX2 with F16C).
    pub(super) fn reads_halves(self) -> bool {
        match self {
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx512 => true,
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx2 => std::arch::is_x86_feature_detected!("f16c"),
            Kernel::Portable => false,
        }
    }

    /// Output columns per panel.
    fn columns(self) -> usize {
        match self {
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx512 => 32,
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx2 => 16,
            Kernel::Portable => 8,
        }
    }
}

/// A linear layer's weight and bias, packed for [`Kernel`].
pub(super) struct Packed {
    kernel: Kernel,
    /// The inner dimension (the layer's inputs).
    inner: usize,
    /// The layer's outputs.
    outputs: usize,
    /// `[outputs / columns][inner][columns]`, the last panel padded with zeros.
    panels: Panels,
    /// `[outputs]` padded with zeros to whole panels.
    bias: Vec<f32>,
}

/// A weight's values, as singles or as halves (IEEE binary16, their bits).
enum Panels {
    Single(Vec<f32>),
    Half(Vec<u16>),
}

/// Row blocks that go through the weight together (8 of 12 rows of 1,536 values: 590 KB,
/// within a core's L2 here).
const GROUP_BLOCKS: usize = 8;

/// From this many rows on, a product is split between threads by rows, not by columns.
const ROWS_TO_SPLIT: usize = 96;

impl Packed {
    /// Packs a weight stored as a linear layer stores it (`[outputs, inner]`, row-major),
    /// and its bias (`[outputs]`), its values held as halves if `halves` and the kernel
    /// [reads them](Kernel::reads_halves).
    pub(super) fn new(
        kernel: Kernel,
        weight: &[f32],
        bias: &[f32],
        inner: usize,
        halves: bool,
    ) -> Packed {
        let outputs = bias.len();
        debug_assert_eq!(weight.len(), outputs * inner);
        let columns = kernel.columns();
        let count = outputs.div_ceil(columns);
        // Panel order: the weight's value at each place of `[count][inner][columns]`.
        let packed = (0..count * inner * columns).map(|at| {
            let (p, k, j) = (at / (inner * columns), at / columns % inner, at % columns);
            let output = p * columns + j;
            match output < outputs {
                true => weight[output * inner + k],
                false => 0.0,
            }
        });
        let panels = match halves && kernel.reads_halves() {
            true => Panels::Half(packed.map(|v| half::f16::from_f32(v).to_bits()).collect()),
            false => Panels::Single(packed.collect()),
        };
        let mut padded = bias.to_vec();
        padded.resize(count * columns, 0.0);
        Packed {
            kernel,
            inner,
            outputs,
            panels,
            bias: padded,
        }
    }

    /// The layer's outputs.
    pub(super) fn outputs(&self) -> usize {
        self.outputs
    }

    /// Whether the weight is held as halves.
    pub(super) fn is_half(&self) -> bool {
        matches!(self.panels, Panels::Half(_))
    }

    /// `x · Wᵀ + b` for `x` of `[rows, inner]`: `[rows, outputs]`.
    ///
    /// On the current rayon pool's threads: many rows are split between them by rows; a
    /// request's few rows by output columns, half of the weight's panels each, since its
    /// product is bound by how fast one core streams the weight in (two cores stream twice
    /// as fast).
    pub(super) fn apply(&self, x: &[f32]) -> Vec<f32> {
        let rows = x.len() / self.inner;
        let mut out = vec![0.0; rows * self.outputs];
        let columns = self.kernel.columns();
        let panels = self.outputs.div_ceil(columns);
        if rayon::current_num_threads() < 2 || panels < 2 {
            self.product(x, 0..panels, &mut out, self.outputs);
        } else if rows >= ROWS_TO_SPLIT {
            // Whole tiles to each side (12 is a multiple of every kernel's tile height).
            let half = rows.div_ceil(2).div_ceil(12) * 12;
            let (top, bottom) = out.split_at_mut(half * self.outputs);
            let (upper, lower) = x.split_at(half * self.inner);
            rayon::join(
                || self.product(upper, 0..panels, top, self.outputs),
                || self.product(lower, 0..panels, bottom, self.outputs),
            );
        } else {
            let middle = panels / 2;
            let left = middle * columns;
            let right_width = self.outputs - left;
            let mut right = vec![0.0; rows * right_width];
            rayon::join(
                || self.product(x, 0..middle, &mut out, self.outputs),
                || self.product(x, middle..panels, &mut right, right_width),
            );
            for (row, part) in out
                .chunks_exact_mut(self.outputs)
                .zip(right.chunks_exact(right_width))
            {
                row[left..].copy_from_slice(part);
            }
        }
        out
    }

    /// The columns of `panels` of `x · Wᵀ + b` into `out`, whose rows are `stride` apart and
    /// start at the first of those columns.
    fn product(&self, x: &[f32], panels: Range<usize>, out: &mut [f32], stride: usize) {
        let part = Part {
            weight: self,
            panels,
            stride,
        };
        match (self.kernel, &self.panels) {
            // SAFETY: `Kernel::detect` chose these only on a CPU with the features, and
            // halves are packed only for a kernel that `reads_halves` on this CPU.
            #[cfg(target_arch = "x86_64")]
            (Kernel::Avx512, Panels::Single(panels)) => unsafe {
                product_avx512::<Single<true>, f32>(&part, panels, x, out)
            },
            #[cfg(target_arch = "x86_64")]
            (Kernel::Avx512, Panels::Half(panels)) => unsafe {
                product_avx512::<x86::HalfAvx512, u16>(&part, panels, x, out)
            },
            #[cfg(target_arch = "x86_64")]
            (Kernel::Avx2, Panels::Single(panels)) => unsafe {
                product_avx2::<Single<true>, f32>(&part, panels, x, out)
            },
            #[cfg(target_arch = "x86_64")]
            (Kernel::Avx2, Panels::Half(panels)) => unsafe {
                product_avx2_f16c::<x86::HalfAvx2, u16>(&part, panels, x, out)
            },
            (Kernel::Portable, Panels::Single(panels)) => {
                product::<4, 2, 8, Single<false>, f32>(&part, panels, x, out)
            }
            // `new` packs halves only for kernels that read them.
            (Kernel::Portable, Panels::Half(_)) => {
                unreachable!("halves are packed only for a kernel that reads them")
            }
        }
    }
}

/// Which panels of a weight one product computes, and where its rows go.
struct Part<'a> {
    weight: &'a Packed,
    panels: Range<usize>,
    /// The distance between two rows of the output.
    stride: usize,
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,fma")]
unsafe fn product_avx512<K: Tile<12, 32, W> + Tile<4, 32, W>, W>(
    w: &Part<'_>,
    panels: &[W],
    x: &[f32],
    out: &mut [f32],
) {
    product::<12, 4, 32, K, W>(w, panels, x, out)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn product_avx2<K: Tile<6, 16, W> + Tile<2, 16, W>, W>(
    w: &Part<'_>,
    panels: &[W],
    x: &[f32],
    out: &mut [f32],
) {
    product::<6, 2, 16, K, W>(w, panels, x, out)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn product_avx2_f16c<K: Tile<6, 16, W> + Tile<2, 16, W>, W>(
    w: &Part<'_>,
    panels: &[W],
    x: &[f32],
    out: &mut [f32],
) {
    product::<6, 2, 16, K, W>(w, panels, x, out)
}

/// The product, a tile of `R` rows by `C` columns at a time (by `K`, over `panels` of `W`),
/// and the rows past a multiple of `R` in tiles of `T` (a request's 13 tokens cost 16 rows,
/// not 24).
#[inline(always)]
fn product<const R: usize, const T: usize, const C: usize, K, W>(
    part: &Part<'_>,
    panels: &[W],
    x: &[f32],
    out: &mut [f32],
) where
    K: Tile<R, C, W> + Tile<T, C, W>,
{
    let w = part.weight;
    let (inner, outputs, stride) = (w.inner, w.outputs, part.stride);
    let skipped = part.panels.start * C;
    // Rows go in groups that stay in the core's own cache while every panel of the weight
    // streams past them once: a request's rows are one group, so its weight is read once
    // whatever its length.
    let group_rows = GROUP_BLOCKS * R;
    let (mut blocks, mut tails) = (Vec::new(), Vec::new());
    for (x, out) in x
        .chunks(inner * group_rows)
        .zip(out.chunks_mut(stride * group_rows))
    {
        let rows = x.len() / inner;
        let (full, tail) = (rows / R, rows % R);
        transpose::<R>(&x[..full * R * inner], inner, &mut blocks);
        transpose::<T>(&x[full * R * inner..], inner, &mut tails);
        for p in part.panels.clone() {
            let panel = &panels[p * inner * C..(p + 1) * inner * C];
            let bias: &[f32; C] = w.bias[p * C..(p + 1) * C]
                .try_into()
                .expect("the bias is padded to whole panels");
            let first = p * C;
            let width = C.min(outputs - first);
            let mut put = |row: usize, line: &[f32; C]| {
                out[row * stride + first - skipped..][..width].copy_from_slice(&line[..width]);
            };
            for (b, block) in blocks.chunks_exact(inner * R).take(full).enumerate() {
                // SAFETY: `product` is compiled, and called, for the tile's features.
                for (r, line) in unsafe { <K as Tile<R, C, W>>::tile(block, panel, bias) }
                    .iter()
                    .enumerate()
                {
                    put(b * R + r, line);
                }
            }
            for (b, block) in tails.chunks_exact(inner * T).enumerate() {
                // SAFETY: as above.
                let tile = unsafe { <K as Tile<T, C, W>>::tile(block, panel, bias) };
                for (r, line) in tile.iter().enumerate().take(tail - b * T) {
                    put(full * R + b * T + r, line);
                }
            }
        }
    }
}

/// Lays `x`'s rows out as blocks of `N` rows, each transposed (`[inner][N]`) so that a step
/// of a tile reads `N` neighbours; a short last block is padded with zero rows. `into` is
/// reused from group to group.
fn transpose<const N: usize>(x: &[f32], inner: usize, into: &mut Vec<f32>) {
    let count = (x.len() / inner).div_ceil(N);
    into.clear();
    into.resize(count * inner * N, 0.0);
    for (r, row) in x.chunks_exact(inner).enumerate() {
        let block = &mut into[(r / N) * inner * N..][..inner * N];
        for (k, value) in row.iter().enumerate() {
            block[k * N + r % N] = *value;
        }
    }
}

/// One tile: `R` rows of `block` (`[inner][R]`) times one panel (`[inner][C]`) of weights
/// held as `W`, plus the bias. Inlined into a product compiled for the kernel's features.
///
/// # Safety
/// The CPU has the features the implementation's intrinsics need.
trait Tile<const R: usize, const C: usize, W> {
    unsafe fn tile(block: &[f32], panel: &[W], bias: &[f32; C]) -> [[f32; C]; R];
}

/// The tile over singles, in plain Rust the compiler vectorises: `FUSED` where the CPU has
/// a fused multiply-add (without one, `mul_add` would be a library call per element).
struct Single<const FUSED: bool>;

impl<const R: usize, const C: usize, const FUSED: bool> Tile<R, C, f32> for Single<FUSED> {
    #[inline(always)]
    unsafe fn tile(block: &[f32], panel: &[f32], bias: &[f32; C]) -> [[f32; C]; R] {
        tile::<R, C, FUSED>(block, panel, bias)
    }
}

/// The single tile's body. With indexed loops over arrays of constant size, so that the
/// compiler unrolls it and keeps the tile in vector registers (written inline in `product`
/// with iterators, it kept the tile in memory and ran 20 times slower).
#[inline(always)]
fn tile<const R: usize, const C: usize, const FUSED: bool>(
    block: &[f32],
    panel: &[f32],
    bias: &[f32; C],
) -> [[f32; C]; R] {
    let mut tile = [*bias; R];
    for (values, weights) in block.chunks_exact(R).zip(panel.chunks_exact(C)) {
        let values: &[f32; R] = values.try_into().expect("chunks of R");
        let weights: &[f32; C] = weights.try_into().expect("chunks of C");
        #[allow(clippy::needless_range_loop)]
        for r in 0..R {
            for j in 0..C {
                tile[r][j] = if FUSED {
                    values[r].mul_add(weights[j], tile[r][j])
                } else {
                    tile[r][j] + values[r] * weights[j]
                };
            }
        }
    }
    tile
}

/// The tiles over halves, which convert each step's weights to singles in the vector unit
/// (`vcvtph2ps`): half the bytes of the weight stream past for the same arithmetic. Written
/// with intrinsics: the single tile's plain Rust fed by a conversion into an array ran twice
/// as slow (the compiler kept the tile in memory), and the AVX-512 forms are why this crate
/// needs Rust 1.89.
#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::{
        __m128i, __m256i, _mm256_cvtph_ps, _mm256_fmadd_ps, _mm256_loadu_ps, _mm256_loadu_si256,
        _mm256_set1_ps, _mm256_storeu_ps, _mm512_cvtph_ps, _mm512_fmadd_ps, _mm512_loadu_ps,
        _mm512_set1_ps, _mm512_storeu_ps, _mm_loadu_si128,
    };

    use super::Tile;

    /// 32 columns as two vectors of 16 (AVX-512F).
    pub(super) struct HalfAvx512;

    impl<const R: usize> Tile<R, 32, u16> for HalfAvx512 {
        #[inline(always)]
        unsafe fn tile(block: &[f32], panel: &[u16], bias: &[f32; 32]) -> [[f32; 32]; R] {
            // SAFETY: the caller's CPU has AVX-512F; every load reads within its slice (a
            // panel step is 32 halves, two vectors of 16).
            unsafe {
                let start = [
                    _mm512_loadu_ps(bias.as_ptr()),
                    _mm512_loadu_ps(bias.as_ptr().add(16)),
                ];
                let mut acc = [start; R];
                for (values, weights) in block.chunks_exact(R).zip(panel.chunks_exact(32)) {
                    let values: &[f32; R] = values.try_into().expect("chunks of R");
                    let at = weights.as_ptr().cast::<__m256i>();
                    let w = [
                        _mm512_cvtph_ps(_mm256_loadu_si256(at)),
                        _mm512_cvtph_ps(_mm256_loadu_si256(at.add(1))),
                    ];
                    for (line, value) in acc.iter_mut().zip(values) {
                        let v = _mm512_set1_ps(*value);
                        line[0] = _mm512_fmadd_ps(v, w[0], line[0]);
                        line[1] = _mm512_fmadd_ps(v, w[1], line[1]);
                    }
                }
                let mut out = [[0.0; 32]; R];
                for (row, line) in out.iter_mut().zip(&acc) {
                    _mm512_storeu_ps(row.as_mut_ptr(), line[0]);
                    _mm512_storeu_ps(row.as_mut_ptr().add(16), line[1]);
                }
                out
            }
        }
    }

    /// 16 columns as two vectors of 8 (AVX2, FMA and F16C).
    pub(super) struct HalfAvx2;

    impl<const R: usize> Tile<R, 16, u16> for HalfAvx2 {
        #[inline(always)]
        unsafe fn tile(block: &[f32], panel: &[u16], bias: &[f32; 16]) -> [[f32; 16]; R] {
            // SAFETY: the caller's CPU has AVX2, FMA and F16C; every load reads within its
            // slice (a panel step is 16 halves, two vectors of 8).
            unsafe {
                let start = [
                    _mm256_loadu_ps(bias.as_ptr()),
                    _mm256_loadu_ps(bias.as_ptr().add(8)),
                ];
                let mut acc = [start; R];
                for (values, weights) in block.chunks_exact(R).zip(panel.chunks_exact(16)) {
                    let values: &[f32; R] = values.try_into().expect("chunks of R");
                    let at = weights.as_ptr().cast::<__m128i>();
                    let w = [
                        _mm256_cvtph_ps(_mm_loadu_si128(at)),
                        _mm256_cvtph_ps(_mm_loadu_si128(at.add(1))),
                    ];
                    for (line, value) in acc.iter_mut().zip(values) {
                        let v = _mm256_set1_ps(*value);
                        line[0] = _mm256_fmadd_ps(v, w[0], line[0]);
                        line[1] = _mm256_fmadd_ps(v, w[1], line[1]);
                    }
                }
                let mut out = [[0.0; 16]; R];
                for (row, line) in out.iter_mut().zip(&acc) {
                    _mm256_storeu_ps(row.as_mut_ptr(), line[0]);
                    _mm256_storeu_ps(row.as_mut_ptr().add(8), line[1]);
                }
                out
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn naive(weight: &[f32], bias: &[f32], x: &[f32], inner: usize) -> Vec<f32> {
        let outputs = bias.len();
        let rows = x.len() / inner;
        let mut out = vec![0.0; rows * outputs];
        for r in 0..rows {
            for o in 0..outputs {
                let dot: f64 = (0..inner)
                    .map(|k| f64::from(x[r * inner + k]) * f64::from(weight[o * inner + k]))
                    .sum();
                out[r * outputs + o] = (dot + f64::from(bias[o])) as f32;
            }
        }
        out
    }

    #[test]
    fn every_kernel_computes_the_product_for_any_shape() {
        let mut seed = 7u32;
        let mut next = move || {
            seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            (seed >> 8) as f32 / (1 << 24) as f32 - 0.5
        };
        // Every kernel this CPU runs, not only the one `detect` picks.
        #[allow(unused_mut)]
        let mut kernels = vec![Kernel::Portable];
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::is_x86_feature_detected as has;
            if has!("avx2") && has!("fma") {
                kernels.push(Kernel::Avx2);
            }
            if has!("avx512f") {
                kernels.push(Kernel::Avx512);
            }
        }
        // Rows and outputs that are and are not whole tiles, and enough rows to split.
        for (rows, inner, outputs) in [(1, 5, 3), (7, 33, 40), (13, 64, 70), (200, 48, 33)] {
            let weight: Vec<f32> = (0..outputs * inner).map(|_| next()).collect();
            let bias: Vec<f32> = (0..outputs).map(|_| next()).collect();
            let x: Vec<f32> = (0..rows * inner).map(|_| next()).collect();
            let expected = naive(&weight, &bias, &x, inner);
            // Held as halves, the product is that of the weight rounded to halves.
            let rounded: Vec<f32> = weight
                .iter()
                .map(|w| half::f16::from_f32(*w).to_f32())
                .collect();
            let expected_half = naive(&rounded, &bias, &x, inner);
            for &kernel in &kernels {
                for halves in [false, true] {
                    let packed = Packed::new(kernel, &weight, &bias, inner, halves);
                    assert_eq!(packed.is_half(), halves && kernel.reads_halves());
                    let expected = match packed.is_half() {
                        true => &expected_half,
                        false => &expected,
                    };
                    let got = packed.apply(&x);
                    assert_eq!(got.len(), expected.len());
                    for (g, e) in got.iter().zip(expected) {
                        assert!(
                            (g - e).abs() < 1e-4,
                            "{kernel:?} halves {halves} {rows}x{inner}x{outputs}"
                        );
                    }
                }
            }
        }
    }
}
