//! Why a node refused a datagram, in one type: the reason an event
//! names ([`Refusal::reason`]) and the counter it was counted under
//! ([`Refusal::counter`], which indexes [`NodeCounters`]). The daemon
//! logs the reason; the kernel data path's counters for the same
//! refusals carry the same counter names (`crates/bpf`, checked there).

use braid_wire::WireError;

use super::config::NodeCounters;
use crate::auth;
use crate::control;

/// Why a datagram was refused. Nothing refused changed any state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// A data datagram or a node message (path report, echo) that does
    /// not parse.
    Malformed(WireError),
    /// A tree-mode packet that carries a source route.
    TreeWithRoute,
    /// A path report for another ingress.
    NotOurReport,
    /// An echo that is neither a request for this node nor a reply to it.
    NotOurEcho,
    /// A session check for another node.
    NotOurCheck,
    /// A session check request for a session this node does not hold as
    /// its ingress (or answered within the last 50 ms).
    UnansweredCheck,
    /// A session check proof no session of ours asked for (a replay, or
    /// one that came after the session gave up).
    UnexpectedProof,
    /// A repair request for another node, or for a session this node
    /// does not hold as its ingress.
    NotOurRequest,
    /// With authentication on: data from an underlay address no
    /// authenticated neighbor uses.
    Unauthenticated,
    /// A node message whose MAC does not check.
    BadNodeMessage(auth::Refusal),
    /// A routed packet whose route names another node before this one
    /// than the neighbor that sent it.
    WrongPreviousHop,
    /// The hop limit ran out.
    HopLimitExceeded,
    /// A routed packet reached a node its route does not name.
    NotOnRoute,
    /// A tree-mode packet reached a node off its entry point's tree.
    NotOnTree,
    /// A control message the control plane refused.
    Control(control::Refused),
}

/// The counter a refusal is counted under.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Counter {
    /// [`NodeCounters::malformed`].
    Malformed,
    /// [`NodeCounters::unauthenticated`].
    Unauthenticated,
    /// [`NodeCounters::wrong_previous_hop`].
    WrongPreviousHop,
    /// [`NodeCounters::hop_limit_exceeded`].
    HopLimitExceeded,
    /// [`NodeCounters::not_on_route`].
    NotOnRoute,
    /// [`NodeCounters::not_on_tree`].
    NotOnTree,
    /// The control plane's `rx_errors`, under the reason's name (it
    /// counts them itself).
    ControlRxErrors,
}

impl Counter {
    /// Every counter a refusal can be counted under.
    pub const ALL: [Counter; 7] = [
        Counter::Malformed,
        Counter::Unauthenticated,
        Counter::WrongPreviousHop,
        Counter::HopLimitExceeded,
        Counter::NotOnRoute,
        Counter::NotOnTree,
        Counter::ControlRxErrors,
    ];

    /// The counter's name (the field of [`NodeCounters`]; the kernel's
    /// counters of the same refusals end with it).
    pub const fn name(self) -> &'static str {
        match self {
            Counter::Malformed => "malformed",
            Counter::Unauthenticated => "unauthenticated",
            Counter::WrongPreviousHop => "wrong_previous_hop",
            Counter::HopLimitExceeded => "hop_limit_exceeded",
            Counter::NotOnRoute => "not_on_route",
            Counter::NotOnTree => "not_on_tree",
            Counter::ControlRxErrors => "rx_errors",
        }
    }
}

impl Refusal {
    /// A short stable name of the reason (events, logs).
    pub fn reason(&self) -> &'static str {
        match self {
            Refusal::Malformed(e) => e.kind(),
            Refusal::TreeWithRoute => "tree_with_route",
            Refusal::NotOurReport => "not_our_report",
            Refusal::NotOurEcho => "not_our_echo",
            Refusal::NotOurCheck => "not_our_check",
            Refusal::UnansweredCheck => "unanswered_check",
            Refusal::UnexpectedProof => "unexpected_proof",
            Refusal::NotOurRequest => "not_our_request",
            Refusal::BadNodeMessage(r) => r.kind(),
            Refusal::Control(r) => r.kind(),
            other => other.counter().name(),
        }
    }

    /// When a neighbor's own control message was refused because its
    /// key is not ours (a MAC made with another secret, a key id we do
    /// not hold, or no MAC at all while ours is on): the refusal's name.
    /// Node messages are left out: they come through relays, so their
    /// underlay address is not their sender's.
    pub fn key_mismatch(&self) -> Option<&'static str> {
        match self {
            Refusal::Control(control::Refused::Auth(
                r @ (auth::Refusal::BadMac
                | auth::Refusal::UnknownKey
                | auth::Refusal::Unauthenticated),
            )) => Some(r.kind()),
            _ => None,
        }
    }

    /// The counter it is counted under.
    pub fn counter(&self) -> Counter {
        match self {
            Refusal::Malformed(_)
            | Refusal::TreeWithRoute
            | Refusal::NotOurReport
            | Refusal::NotOurEcho
            | Refusal::NotOurCheck
            | Refusal::UnansweredCheck
            | Refusal::UnexpectedProof
            | Refusal::NotOurRequest => Counter::Malformed,
            Refusal::Unauthenticated | Refusal::BadNodeMessage(_) => Counter::Unauthenticated,
            Refusal::WrongPreviousHop => Counter::WrongPreviousHop,
            Refusal::HopLimitExceeded => Counter::HopLimitExceeded,
            Refusal::NotOnRoute => Counter::NotOnRoute,
            Refusal::NotOnTree => Counter::NotOnTree,
            Refusal::Control(_) => Counter::ControlRxErrors,
        }
    }
}

impl NodeCounters {
    /// The node's own count under `counter` (`None` for the control
    /// plane's, which it keeps itself).
    pub fn get(&self, counter: Counter) -> Option<u64> {
        let mut copy = *self;
        copy.slot(counter).map(|n| *n)
    }

    fn slot(&mut self, counter: Counter) -> Option<&mut u64> {
        Some(match counter {
            Counter::Malformed => &mut self.malformed,
            Counter::Unauthenticated => &mut self.unauthenticated,
            Counter::WrongPreviousHop => &mut self.wrong_previous_hop,
            Counter::HopLimitExceeded => &mut self.hop_limit_exceeded,
            Counter::NotOnRoute => &mut self.not_on_route,
            Counter::NotOnTree => &mut self.not_on_tree,
            Counter::ControlRxErrors => return None,
        })
    }

    /// Counts `refusal` under its counter.
    pub fn count(&mut self, refusal: Refusal) {
        if let Some(n) = self.slot(refusal.counter()) {
            *n += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_refusal_is_counted_once_under_the_counter_it_names() {
        let all = [
            Refusal::Malformed(WireError::UnknownType(9)),
            Refusal::TreeWithRoute,
            Refusal::NotOurReport,
            Refusal::NotOurEcho,
            Refusal::Unauthenticated,
            Refusal::BadNodeMessage(auth::Refusal::BadMac),
            Refusal::WrongPreviousHop,
            Refusal::HopLimitExceeded,
            Refusal::NotOnRoute,
            Refusal::NotOnTree,
            Refusal::Control(control::Refused::DuplicateId),
        ];
        for r in all {
            let mut c = NodeCounters::default();
            c.count(r);
            for counter in Counter::ALL {
                let want = u64::from(counter == r.counter());
                if let Some(n) = c.get(counter) {
                    assert_eq!(n, want, "{r:?} under {}", counter.name());
                }
            }
            let total: u64 = Counter::ALL.iter().filter_map(|&k| c.get(k)).sum();
            assert_eq!(total, u64::from(r.counter() != Counter::ControlRxErrors));
        }
    }

    #[test]
    fn reasons_keep_their_names() {
        assert_eq!(
            Refusal::Malformed(WireError::UnknownType(9)).reason(),
            "unknown_type"
        );
        assert_eq!(Refusal::NotOnRoute.reason(), "not_on_route");
        assert_eq!(Refusal::HopLimitExceeded.reason(), "hop_limit_exceeded");
        assert_eq!(Refusal::WrongPreviousHop.reason(), "wrong_previous_hop");
        assert_eq!(Refusal::Unauthenticated.reason(), "unauthenticated");
        assert_eq!(
            Refusal::BadNodeMessage(auth::Refusal::BadMac).reason(),
            "bad_mac"
        );
        assert_eq!(Refusal::TreeWithRoute.reason(), "tree_with_route");
        assert_eq!(
            Refusal::Control(control::Refused::DuplicateId).reason(),
            "duplicate_id"
        );
    }
}
