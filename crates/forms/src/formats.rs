//! The string formats `email`, `uri`, `date` and `date-time`, checked at least as strictly as
//! ajv-formats so that content we accept also passes the TS SDK's Ajv check.
