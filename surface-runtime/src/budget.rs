//! Which capabilities a snapshot keeps under a budget (`docs/pipeline.md`,
//! "Large surfaces"): the highest priority first, an available one before
//! an unavailable one of the same priority, then registration order; an
//! item that does not fit is dropped and smaller ones after it may still
//! fit. Pure: the snapshot gives the ranks and keeps what this says.

/// How a snapshot is cut down for a surface too large for one tool list
/// (`docs/pipeline.md`, "Large surfaces"). The default lists everything.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SnapshotOptions {
    /// Capability-id prefixes to list (`"domain:devices."`,
    /// `"view:devices.table."`); empty lists every capability. A component
    /// keeps the capabilities in scope and is left out when none is.
    pub scope: Vec<String>,
    /// At most this many capabilities: each procedure binding counts 1, a
    /// component as many as its capabilities in scope (one without
    /// capabilities counts 0 and is always listed). The highest
    /// priority is kept first (`AgentProcedureBinding::priority`,
    /// `ComponentDefinition::priority`), an available capability before an
    /// unavailable one of the same priority, then registration order; what
    /// is left out is counted in the snapshot's `truncated`. `None`: no
    /// budget.
    pub budget: Option<usize>,
}

/// One candidate: a procedure binding (cost 1) or a component (cost: its
/// capabilities; 0 for one without capabilities, which is always kept).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Rank {
    /// Higher first.
    pub(crate) priority: i32,
    /// Available before unavailable at one priority.
    pub(crate) available: bool,
    /// How much of the budget it takes.
    pub(crate) cost: usize,
}

/// Whether each candidate (in registration order) is kept within
/// `budget`.
pub(crate) fn within_budget(ranks: &[Rank], budget: usize) -> Vec<bool> {
    let mut order: Vec<usize> = (0..ranks.len()).collect();
    // Stable: ties keep registration order.
    order.sort_by(|&a, &b| {
        let (a, b) = (&ranks[a], &ranks[b]);
        b.priority
            .cmp(&a.priority)
            .then(b.available.cmp(&a.available))
    });
    let mut keep = vec![false; ranks.len()];
    let mut left = budget;
    for i in order {
        let cost = ranks[i].cost;
        if cost <= left {
            left -= cost;
            keep[i] = true;
        }
    }
    keep
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rank(priority: i32, available: bool, cost: usize) -> Rank {
        Rank {
            priority,
            available,
            cost,
        }
    }

    #[test]
    fn priority_then_availability_then_registration_order() {
        let ranks = [
            rank(0, true, 1),
            rank(5, false, 1),
            rank(5, true, 1),
            rank(0, true, 1),
            rank(-1, true, 1),
        ];
        assert_eq!(within_budget(&ranks, 2), [false, true, true, false, false]);
        assert_eq!(within_budget(&ranks, 3), [true, true, true, false, false]);
        assert_eq!(within_budget(&ranks, 0), [false; 5]);
        assert_eq!(within_budget(&ranks, 9), [true; 5]);
    }

    #[test]
    fn an_item_that_does_not_fit_leaves_room_for_smaller_ones() {
        let ranks = [rank(9, true, 4), rank(1, true, 2), rank(0, true, 1)];
        assert_eq!(within_budget(&ranks, 3), [false, true, true]);
        assert_eq!(within_budget(&ranks, 4), [true, false, false]);
    }
}
