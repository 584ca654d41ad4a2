//! The Prometheus text exposition format: a family's `# HELP` and
//! `# TYPE` lines, its samples with their labels escaped, and the labels
//! every session's samples carry.

use std::fmt::Write;

/// One metric family being written: its samples follow its header.
pub(super) struct Family<'a> {
    out: &'a mut String,
    name: &'static str,
}

impl Family<'_> {
    /// One sample: its labels (escaped) and value (`+Inf` when not
    /// finite).
    pub fn sample(&mut self, labels: &[(&str, String)], value: f64) {
        let _ = write!(self.out, "{}", self.name);
        if !labels.is_empty() {
            self.out.push('{');
            for (i, (k, v)) in labels.iter().enumerate() {
                if i > 0 {
                    self.out.push(',');
                }
                let v = v
                    .replace('\\', "\\\\")
                    .replace('"', "\\\"")
                    .replace('\n', "\\n");
                let _ = write!(self.out, "{k}=\"{v}\"");
            }
            self.out.push('}');
        }
        if value.is_finite() {
            let _ = writeln!(self.out, " {value}");
        } else {
            let _ = writeln!(self.out, " +Inf");
        }
    }
}

/// Starts family `name` of type `kind` (`gauge`, `counter`): its help
/// and type lines.
pub(super) fn family<'a>(
    out: &'a mut String,
    name: &'static str,
    kind: &str,
    help: &str,
) -> Family<'a> {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
    Family { out, name }
}

/// Labels of one session's samples: this node, the peer (`egress` at an
/// ingress session, `ingress` at an egress one) and the class.
pub(super) struct SessionLabels(pub Vec<(&'static str, String)>);

impl SessionLabels {
    /// This node `me`, the peer under `peer_key`, the class.
    pub fn new(me: &str, peer_key: &'static str, peer: u16, class: u8) -> Self {
        SessionLabels(vec![
            ("node", me.to_string()),
            (peer_key, peer.to_string()),
            ("class", class.to_string()),
        ])
    }

    /// These labels and one more.
    pub fn with(&self, key: &'static str, value: impl ToString) -> Vec<(&'static str, String)> {
        let mut l = self.0.clone();
        l.push((key, value.to_string()));
        l
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_sample_carries_node_peer_class_and_its_own_label() {
        let mut out = String::new();
        let mut f = family(&mut out, "braid_path_sent_total", "counter", "Sent.");
        let l = SessionLabels::new("1", "egress", 4, 2);
        f.sample(&l.with("path", 1), 7.0);
        f.sample(&l.0, f64::INFINITY);
        assert_eq!(
            out,
            "# HELP braid_path_sent_total Sent.\n# TYPE braid_path_sent_total counter\n\
             braid_path_sent_total{node=\"1\",egress=\"4\",class=\"2\",path=\"1\"} 7\n\
             braid_path_sent_total{node=\"1\",egress=\"4\",class=\"2\"} +Inf\n"
        );
    }
}
