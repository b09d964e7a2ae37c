//! Values as bytes: postcard (compact, serde) for everything openraft hands the store.

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::Error;

/// `value` as bytes.
pub(crate) fn encode<T: Serialize>(what: &'static str, value: &T) -> Result<Vec<u8>, Error> {
    postcard::to_stdvec(value).map_err(|e| Error::corrupt(what, e))
}

/// The value `bytes` encode; an error naming `what` if they do not.
pub(crate) fn decode<T: DeserializeOwned>(what: &'static str, bytes: &[u8]) -> Result<T, Error> {
    postcard::from_bytes(bytes).map_err(|e| Error::corrupt(what, e))
}
