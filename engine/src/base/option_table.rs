//! The machinery behind the one declaration of every option (`base::options`): from a table of
//! options, each with its documentation, type, default and whether `set_options` may change
//! it on an open database, [`define_options!`] generates
//!
//! * the `Options` struct and its `Default`;
//! * the `KeyspaceOptions` struct (the table's keyspace part), `From<&Options>` and
//!   `KeyspaceOptions::overlay` (a keyspace's options over the database's);
//! * the keyspace options' text (`keyspace_option_lines`) and its reader
//!   (`read_keyspace_option`), one [`OptionText`](crate::base::option_text::OptionText) call
//!   per option;
//! * [`OptionInfo`] lists of both parts (`DB_OPTIONS`, `KEYSPACE_OPTIONS`), which
//!   `base::live_options` reads to tell live options from fixed ones.
//!
//! An option is `live` (changed by `set_options` on an open database) or `fixed` (set at open,
//! or when a keyspace is created).

/// One option of the table: its name and whether `set_options` may change it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct OptionInfo {
    /// The field's name, which is also its name in `set_options` and the options text.
    pub name: &'static str,
    /// Whether `set_options` changes it on an open database.
    pub live: bool,
}

/// `true` for `live`, `false` for `fixed`: an option's mode in the table.
macro_rules! option_is_live {
    (live) => {
        true
    };
    (fixed) => {
        false
    };
}
pub(crate) use option_is_live;

/// Generates the option types from the table in `base::options` (see the module header).
macro_rules! define_options {
    (
        $(#[$db_attr:meta])* pub struct $db:ident;
        $(#[$ks_attr:meta])* pub struct $ks:ident;
        database {
            $( $(#[$d_attr:meta])* $d_mode:ident $d_name:ident : $d_ty:ty = $d_default:expr, )*
        }
        keyspace {
            $( $(#[$k_attr:meta])* $k_mode:ident $k_name:ident : $k_ty:ty = $k_default:expr, )*
        }
    ) => {
        $(#[$db_attr])*
        #[derive(Clone)]
        pub struct $db {
            $( $(#[$d_attr])* pub $d_name: $d_ty, )*
            $( $(#[$k_attr])* pub $k_name: $k_ty, )*
        }

        impl Default for $db {
            fn default() -> Self {
                $db {
                    $( $d_name: $d_default, )*
                    $( $k_name: $k_default, )*
                }
            }
        }

        $(#[$ks_attr])*
        #[derive(Clone)]
        pub struct $ks {
            $( $(#[$k_attr])* pub $k_name: $k_ty, )*
        }

        impl From<&$db> for $ks {
            /// The keyspace fields of `options` (the `"default"` keyspace's).
            #[allow(clippy::clone_on_copy)]
            fn from(options: &$db) -> Self {
                $ks { $( $k_name: options.$k_name.clone(), )* }
            }
        }

        impl $ks {
            /// `db` with its keyspace fields replaced by these.
            #[allow(clippy::clone_on_copy)]
            pub(crate) fn overlay(&self, db: &$db) -> $db {
                let mut options = db.clone();
                $( options.$k_name = self.$k_name.clone(); )*
                options
            }
        }

        /// The options text's lines of `o`, in the table's order.
        pub(crate) fn keyspace_option_lines(o: &$ks) -> Vec<(&'static str, String)> {
            let mut lines = Vec::new();
            $( $crate::base::option_text::OptionText::write_text(
                &o.$k_name, stringify!($k_name), &mut lines,
            ); )*
            lines
        }

        /// Reads one line of the options text into `o`: `None` if no option has the key,
        /// `Some(false)` if its value does not parse.
        pub(crate) fn read_keyspace_option(o: &mut $ks, key: &str, value: &str) -> Option<bool> {
            $( if let Some(read) = $crate::base::option_text::OptionText::read_text(
                &mut o.$k_name, stringify!($k_name), key, value,
            ) {
                return Some(read);
            } )*
            None
        }

        /// The database-wide options.
        pub(crate) const DB_OPTIONS: &[$crate::base::option_table::OptionInfo] = &[ $(
            $crate::base::option_table::OptionInfo {
                name: stringify!($d_name),
                live: $crate::base::option_table::option_is_live!($d_mode),
            },
        )* ];

        /// The keyspace options.
        pub(crate) const KEYSPACE_OPTIONS: &[$crate::base::option_table::OptionInfo] = &[ $(
            $crate::base::option_table::OptionInfo {
                name: stringify!($k_name),
                live: $crate::base::option_table::option_is_live!($k_mode),
            },
        )* ];
    };
}
pub(crate) use define_options;
