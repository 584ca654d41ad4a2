//! Seeded topology generators. Given the same RNG state they produce the
//! same graph, byte for byte.

use rand_core::RngCore;

use crate::graph::{Graph, GraphBuilder};
use crate::metric::Metric;
use crate::random::unit_f64;

/// A random geometric mesh: nodes placed uniformly in the unit square,
/// linked when closer than a radius.
#[derive(Debug, Clone)]
pub struct GeometricMesh {
    /// Each node's position in the unit square, by node index.
    pub positions: Vec<(f64, f64)>,
    /// Radio range: nodes closer than this are linked.
    pub radius: f64,
    /// The mesh; node i sits at `positions[i]`.
    pub graph: Graph,
}

/// Places `n` nodes and links every pair within the radius that gives the
/// requested average degree. In the unit square, border effects included,
/// the expected degree is (n-1)·(πr² − 8r³/3 + r⁴/2); the radius is solved
/// from it by bisection. A link's cost grows with its length, as a radio link's ETX
/// does: 1 at zero distance to 4 at the edge of range, the same both ways.
pub fn random_geometric(n: usize, avg_degree: f64, rng: &mut dyn RngCore) -> GeometricMesh {
    let positions: Vec<(f64, f64)> = (0..n).map(|_| (unit_f64(rng), unit_f64(rng))).collect();
    let radius = radius_for_degree(n, avg_degree);
    // Bucket nodes into cells of one radius so that only neighbors are compared.
    let cells = ((1.0 / radius).floor() as usize).clamp(1, 1 << 12);
    let cell = |x: f64| ((x * cells as f64) as usize).min(cells - 1);
    let mut grid: Vec<Vec<u32>> = vec![Vec::new(); cells * cells];
    for (i, &(x, y)) in positions.iter().enumerate() {
        grid[cell(y) * cells + cell(x)].push(i as u32);
    }
    let mut b = GraphBuilder::new(n);
    for (i, &(x, y)) in positions.iter().enumerate() {
        let (cx, cy) = (cell(x), cell(y));
        for gy in cy.saturating_sub(1)..=(cy + 1).min(cells - 1) {
            for gx in cx.saturating_sub(1)..=(cx + 1).min(cells - 1) {
                for &j in &grid[gy * cells + gx] {
                    if (j as usize) <= i {
                        continue;
                    }
                    let (xj, yj) = positions[j as usize];
                    let d = ((x - xj).powi(2) + (y - yj).powi(2)).sqrt();
                    if d < radius {
                        let cost = Metric::saturating_from_f64(1.0 + 3.0 * (d / radius).powi(2));
                        b.add_link(i as u32, j, Some(cost), Some(cost));
                    }
                }
            }
        }
    }
    GeometricMesh {
        positions,
        radius,
        graph: b.build(),
    }
}

/// The radius whose expected degree in the unit square is `degree`.
fn radius_for_degree(n: usize, degree: f64) -> f64 {
    let others = n.saturating_sub(1).max(1) as f64;
    let expected =
        |r: f64| others * (std::f64::consts::PI * r * r - 8.0 * r.powi(3) / 3.0 + r.powi(4) / 2.0);
    let (mut lo, mut hi) = (0.0f64, 1.0f64);
    for _ in 0..60 {
        let mid = (lo + hi) / 2.0;
        if expected(mid) < degree {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    hi
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_chacha::rand_core::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    #[test]
    fn same_seed_same_mesh_and_degree_near_target() {
        let a = random_geometric(1000, 8.0, &mut ChaCha8Rng::seed_from_u64(7));
        let b = random_geometric(1000, 8.0, &mut ChaCha8Rng::seed_from_u64(7));
        assert_eq!(a.positions, b.positions);
        assert_eq!(a.graph.arc_count(), b.graph.arc_count());
        let degree = a.graph.arc_count() as f64 / 1000.0;
        assert!((7.5..=8.5).contains(&degree), "average degree {degree}");
    }
}
