//! babeld (Debian's package) as the lab's routing, the peer braid's
//! failover is compared with: wired interfaces with the scenario's hello
//! interval, announcing the host subnets and nothing else, its pid and
//! state files in the lab's directory (the default paths are shared by
//! every namespace).

use std::path::PathBuf;
use std::time::Duration;

use crate::scenario::Lab;
use crate::step::Step;

/// Router `i`'s babeld config file and daemon.
pub fn start(lab: &Lab, i: usize, hello: Duration) -> Vec<Step> {
    let dir = lab.dir();
    let name = &lab.routers[i].name;
    let hello_s = format!("{}", hello.as_secs_f64());
    let mut conf = String::new();
    for n in lab.interfaces_of(i) {
        conf.push_str(&format!(
            "interface {n} type wired hello-interval {hello_s}\n"
        ));
    }
    // A gateway announces its default route (its ISP), unchecked, as
    // babeld does (proto 3: `ip route add` makes "boot" routes, which
    // babeld takes only when asked by protocol).
    if lab.routers[i].uplink {
        conf.push_str("redistribute ip 0.0.0.0/0 eq 0 proto 3 allow\n");
    }
    conf.push_str("redistribute ip 198.18.0.0/16 ge 24 le 24 allow\nredistribute local deny\nredistribute deny\n");
    let file = format!("{name}.babeld.conf");
    let (pid, state) = (
        dir.join(format!("{name}.babeld.pid")),
        dir.join(format!("{name}.babel-state")),
    );
    vec![
        Step::File {
            name: file.clone(),
            contents: conf,
        },
        // babeld will not start while a pid file of a previous run stands.
        Step::Remove {
            name: format!("{name}.babeld.pid"),
        },
        Step::Daemon {
            router: i,
            program: PathBuf::from("babeld"),
            args: vec![
                "-c".into(),
                dir.join(file).display().to_string(),
                "-I".into(),
                pid.display().to_string(),
                "-S".into(),
                state.display().to_string(),
                "-d".into(),
                "0".into(),
            ],
        },
    ]
}
