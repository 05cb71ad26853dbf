//! The heavy sinks a build may leave out. Each is a Cargo feature (see
//! Cargo.toml) so that the rest of turnlake builds without libtorch, a C++
//! toolchain or Ballista's gRPC stack; a command that needs one this build
//! left out says which feature builds it.

/// A part of turnlake behind its own Cargo feature.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sink {
    /// `turnlake train` and `mix sweep` (tch, libtorch).
    Train,
    /// `turnlake scorer` (XGBoost).
    Scorer,
    /// `turnlake cluster` and `--cluster` (Ballista).
    Cluster,
}

impl Sink {
    pub const ALL: [Sink; 3] = [Sink::Train, Sink::Scorer, Sink::Cluster];

    /// The Cargo feature that builds it.
    pub fn feature(self) -> &'static str {
        match self {
            Sink::Train => "train",
            Sink::Scorer => "scorer",
            Sink::Cluster => "cluster",
        }
    }

    /// Whether this build has it.
    pub fn built(self) -> bool {
        match self {
            Sink::Train => cfg!(feature = "train"),
            Sink::Scorer => cfg!(feature = "scorer"),
            Sink::Cluster => cfg!(feature = "cluster"),
        }
    }

    /// The error for `what` (a command or option) when this build lacks the sink.
    pub fn missing(self, what: &str) -> NotBuilt {
        NotBuilt {
            what: what.to_string(),
            feature: self.feature(),
        }
    }

    /// `Ok` when built, else the error naming the feature `what` needs.
    pub fn require(self, what: &str) -> Result<(), NotBuilt> {
        if self.built() {
            Ok(())
        } else {
            Err(self.missing(what))
        }
    }
}

/// A command or option whose sink this build left out.
#[derive(Debug, thiserror::Error)]
#[error(
    "{what} needs the `{feature}` feature, which this build of turnlake left out: \
     build with `cargo build --features {feature}` (the default features include it)"
)]
pub struct NotBuilt {
    pub what: String,
    pub feature: &'static str,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_sink_names_its_own_feature_in_its_error() {
        for sink in Sink::ALL {
            let message = sink.missing("turnlake x").to_string();
            assert!(message.starts_with("turnlake x needs"), "{message}");
            assert!(
                message.contains(&format!("--features {}", sink.feature())),
                "{message}"
            );
            assert_eq!(sink.require("turnlake x").is_ok(), sink.built());
        }
    }

    #[test]
    fn built_follows_the_cargo_features() {
        assert_eq!(Sink::Train.built(), cfg!(feature = "train"));
        assert_eq!(Sink::Scorer.built(), cfg!(feature = "scorer"));
        assert_eq!(Sink::Cluster.built(), cfg!(feature = "cluster"));
    }
}
