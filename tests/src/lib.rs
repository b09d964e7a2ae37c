//! siftdb-tests: integration, model-based, crash and fault-injection tests (arrive in later changes).
