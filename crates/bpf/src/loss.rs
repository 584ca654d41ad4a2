//! The lab's loss program (`bpf/loss.c`), loaded with its parameters and
//! attached first on an interface's receiving side (a TCX link, ahead of
//! anything else there, the kernel data path included: a packet a link
//! loses never reaches the router). Detached when dropped.

use aya::programs::tc::TcAttachOptions;
use aya::programs::{LinkOrder, ProgramError, SchedClassifier, TcAttachType, TestRun};
use aya::{Ebpf, EbpfLoader, TestRunOptions};

use crate::DatapathError;

/// A loss program attached to one interface.
pub struct Loss {
    ebpf: Ebpf,
}

impl std::fmt::Debug for Loss {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Loss").finish_non_exhaustive()
    }
}

impl Loss {
    /// Loads the program with `globals` (each an 8-byte parameter of
    /// loss.c by name); nothing is attached yet.
    pub fn load(globals: &[(&str, u64)]) -> Result<Loss, DatapathError> {
        if let Some(why) = crate::objects::missing() {
            return Err(DatapathError::NotBuilt(why));
        }
        let mut loader = EbpfLoader::new();
        for (name, value) in globals {
            loader.override_global(name, value, true);
        }
        let mut loss = Loss {
            ebpf: loader.load(crate::objects::LOSS)?,
        };
        let prog = loss.program()?;
        crate::datapath::verify(|| prog.load()).map_err(err("verifying"))?;
        Ok(loss)
    }

    fn program(&mut self) -> Result<&mut SchedClassifier, DatapathError> {
        self.ebpf
            .program_mut("ge_loss")
            .and_then(|p| p.try_into().ok())
            .ok_or(DatapathError::Map("ge_loss"))
    }

    /// Attaches it first on `dev`'s receiving side, in the calling
    /// thread's network namespace.
    pub fn attach(&mut self, dev: &str) -> Result<(), DatapathError> {
        self.program()?
            .attach_with_options(
                dev,
                TcAttachType::Ingress,
                TcAttachOptions::TcxOrder(LinkOrder::first()),
            )
            .map(|_| ())
            .map_err(err("attaching"))
    }

    /// Runs the program once on `frame`: its verdict (2: dropped).
    pub fn test_run(&mut self, frame: &[u8]) -> Result<u32, DatapathError> {
        let opts = TestRunOptions {
            data_in: Some(frame),
            ..Default::default()
        };
        self.program()?
            .test_run(opts)
            .map(|r| r.return_value)
            .map_err(err("test-running"))
    }
}

fn err(what: &'static str) -> impl FnOnce(ProgramError) -> DatapathError {
    move |source| DatapathError::Program {
        what,
        program: "ge_loss",
        source,
    }
}
