//! A module given on the command line, read once, when clap reads the argument: the library's
//! typed name ([`ModuleId`] for a module to make or change, [`ModuleName`] for one to act on or
//! show), or the refusal of a text that is none. clap takes every text (its own usage errors
//! come first, as they always did); `validate::ids` gives the first refusal (exit 2, the
//! library's line and hint) before the command looks at the root; the command then takes the
//! typed value ([`ModuleArg::get`]) and hands it to `Backend` or `Root` as it is: no text is read
//! twice.
//!

use std::convert::Infallible;
use std::str::FromStr;

use ck_cgroup::{Class, Error, ErrorKind, ModuleId, ModuleName};

use super::promises::types::GivenModule;
#[cfg(test)]
use super::promises::types::Modules;

/// A `T` as given on the command line (`ModuleArg<ModuleId>`, `ModuleArg<ModuleName>`): read once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModuleArg<T>(Result<T, Refusal>);

/// Why a text is no `T`: the library's error in its parts (clap's values are `Clone`, an
/// [`Error`] is not), made again, the same, by [`ModuleArg::get`].
#[derive(Debug, Clone, PartialEq, Eq)]
struct Refusal {
    message: String,
    hint: Option<String>,
    kind: ErrorKind,
    class: Class,
}

impl Refusal {
    fn of(e: &Error) -> Refusal {
        Refusal {
            message: e.message().to_string(),
            hint: e.hint().map(str::to_string),
            kind: e.kind(),
            class: e.class(),
        }
    }

    fn error(&self) -> Error {
        let e = Error::bad_input(self.message.clone())
            .with_class(self.class)
            .with_kind(self.kind);
        match &self.hint {
            Some(h) => e.with_hint(h.clone()),
            None => e,
        }
    }
}

impl<T: FromStr<Err = Error>> ModuleArg<T> {
    /// Read `text` as a `T` (`ModuleId::new`, `ModuleName::parse`): clap's parser for the
    /// argument, which takes every text and keeps the refusal for [`ModuleArg::get`].
    pub fn read(text: &str) -> Result<ModuleArg<T>, Infallible> {
        Ok(ModuleArg(text.parse().map_err(|e| Refusal::of(&e))))
    }
}

impl<T: Clone> ModuleArg<T> {
    /// The typed value; the library's refusal of the text where it is none (bad input, exit 2).
    pub fn get(&self) -> Result<&T, Error> {
        self.0.as_ref().map_err(Refusal::error)
    }

    /// Whether the text was a `T`: [`ModuleArg::get`] without the value (`validate::ids`).
    pub fn check(&self) -> Result<(), Error> {
        self.get().map(drop)
    }

    /// Each one's typed value, in order (the names of `status`, `ps`, `watch`, `prune --keep`);
    /// the first refusal where a text is none.
    pub fn all(given: &[ModuleArg<T>]) -> Result<Vec<T>, Error> {
        given.iter().map(|g| g.get().cloned()).collect()
    }
}

/// A module id to make or change (`Modules::Ids`).
impl GivenModule for ModuleArg<ModuleId> {
    fn check(&self) -> Result<(), Error> {
        ModuleArg::check(self)
    }
    #[cfg(test)]
    fn reads(&self) -> Modules {
        Modules::Ids
    }
}

/// A module name to act on or show (`Modules::Names`).
impl GivenModule for ModuleArg<ModuleName> {
    fn check(&self) -> Result<(), Error> {
        ModuleArg::check(self)
    }
    #[cfg(test)]
    fn reads(&self) -> Modules {
        Modules::Names
    }
}

/// clap reads a `ModuleArg<T>` argument with [`ModuleArg::read`], so that a field's type is all it
/// takes (`pub id: ModuleArg<ModuleId>`, `pub ids: Vec<ModuleArg<ModuleName>>`).
impl<T> clap::builder::ValueParserFactory for ModuleArg<T>
where
    T: FromStr<Err = Error> + Clone + Send + Sync + 'static,
{
    type Parser = fn(&str) -> Result<ModuleArg<T>, Infallible>;
    fn value_parser() -> Self::Parser {
        ModuleArg::<T>::read
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The refusal made again is the library's error: its line, hint, kind and exit code.
    #[test]
    fn a_refusal_is_the_librarys_error_made_again() {
        for text in ["", "..", "a/b", "a\\b", "cgroup.procs", &"a".repeat(65)] {
            let want = ModuleId::new(text).unwrap_err();
            let got = ModuleArg::<ModuleId>::read(text)
                .unwrap()
                .get()
                .unwrap_err();
            assert_eq!(
                (got.message(), got.hint(), got.kind(), got.exit_code()),
                (want.message(), want.hint(), want.kind(), want.exit_code()),
                "{text:?}"
            );
            if let Err(want) = ModuleName::parse(text) {
                let got = ModuleArg::<ModuleName>::read(text)
                    .unwrap()
                    .check()
                    .unwrap_err();
                assert_eq!(
                    (got.message(), got.hint(), got.kind(), got.exit_code()),
                    (want.message(), want.hint(), want.kind(), want.exit_code()),
                    "{text:?}"
                );
            }
        }
        let web = ModuleArg::<ModuleName>::read("daemon/subc-modules/web").unwrap();
        assert_eq!(web.get().unwrap().to_string(), "daemon/subc-modules/web");
    }
}
