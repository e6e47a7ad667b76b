//! The store's SQL, spoken to either backend: [`Conn`] runs a statement on SQLite (always built)
//! or on PostgreSQL (feature `postgres`), with the same text, the same parameters and the same
//! rows.
//!
//! The row operations are written once, in the SQL both databases read: numbered parameters
//! (`?1`; PostgreSQL's `$1` is written from them), `INSERT ... ON CONFLICT`, `RETURNING`, and
//! integers for booleans and instants. What differs is asked of the [`Dialect`] (a function
//! name, a JSON array's elements, the row lock a claim takes). Values cross as [`Value`]: a 64-bit
//! integer, a double, text, bytes or NULL, the five types SQLite stores; PostgreSQL's columns are
//! `BIGINT`, `DOUBLE PRECISION`, `TEXT` and `BYTEA` to match.

pub(super) use super::value::{DbError, DbResult, ErrorKind, Value};

/// A Rust value a statement takes as a parameter.
pub(in crate::service) trait ToValue {
    fn to_value(&self) -> Value;
}

macro_rules! to_value_int {
    ($($type:ty),*) => {$(
        impl ToValue for $type {
            fn to_value(&self) -> Value {
                Value::Int(i64::from(*self))
            }
        }
    )*};
}
to_value_int!(i64, i32, i16, u32, u16, u8);

impl ToValue for u64 {
    fn to_value(&self) -> Value {
        // Counts and sizes: never near i64::MAX; saturate rather than wrap if one were.
        Value::Int(i64::try_from(*self).unwrap_or(i64::MAX))
    }
}

impl ToValue for usize {
    fn to_value(&self) -> Value {
        Value::Int(i64::try_from(*self).unwrap_or(i64::MAX))
    }
}

impl ToValue for bool {
    fn to_value(&self) -> Value {
        Value::Int(i64::from(*self))
    }
}

impl ToValue for f64 {
    fn to_value(&self) -> Value {
        Value::Real(*self)
    }
}

impl ToValue for str {
    fn to_value(&self) -> Value {
        Value::Text(self.to_owned())
    }
}

impl ToValue for String {
    fn to_value(&self) -> Value {
        Value::Text(self.clone())
    }
}

impl ToValue for [u8] {
    fn to_value(&self) -> Value {
        Value::Blob(self.to_vec())
    }
}

impl ToValue for Vec<u8> {
    fn to_value(&self) -> Value {
        Value::Blob(self.clone())
    }
}

impl ToValue for Value {
    fn to_value(&self) -> Value {
        self.clone()
    }
}

impl<T: ToValue> ToValue for Option<T> {
    fn to_value(&self) -> Value {
        self.as_ref().map_or(Value::Null, ToValue::to_value)
    }
}

impl<T: ToValue + ?Sized> ToValue for &T {
    fn to_value(&self) -> Value {
        (**self).to_value()
    }
}

/// A statement's parameters, in order: `params![a, b]` or an array of one type.
pub(super) trait Params {
    fn to_values(&self) -> Vec<Value>;
}

impl Params for &[&dyn ToValue] {
    fn to_values(&self) -> Vec<Value> {
        self.iter().map(|value| value.to_value()).collect()
    }
}

impl<T: ToValue, const N: usize> Params for [T; N] {
    fn to_values(&self) -> Vec<Value> {
        self.iter().map(ToValue::to_value).collect()
    }
}

impl Params for Vec<Value> {
    fn to_values(&self) -> Vec<Value> {
        self.clone()
    }
}

/// A statement's parameters: `params![a, b, c]`, each anything [`ToValue`] takes.
macro_rules! params {
    () => {
        &[] as &[&dyn $crate::service::store::sql::ToValue]
    };
    ($($value:expr),+ $(,)?) => {
        &[$(&$value as &dyn $crate::service::store::sql::ToValue),+]
            as &[&dyn $crate::service::store::sql::ToValue]
    };
}
pub(super) use params;

/// A Rust value a column is read into.
pub(super) trait FromValue: Sized {
    fn from_value(value: &Value) -> DbResult<Self>;
}

/// A column of another type than the Rust side reads. The message names the types only: the
/// value may be personal data, and the message may reach an answer's body.
fn wrong_type(value: &Value, wanted: &str) -> DbError {
    let held = match value {
        Value::Null => "NULL",
        Value::Int(_) => "an integer",
        Value::Real(_) => "a real number",
        Value::Text(_) => "text",
        Value::Blob(_) => "bytes",
    };
    DbError::new(
        ErrorKind::Other,
        format!("column holds {held}, not {wanted}"),
    )
}

macro_rules! from_value_int {
    ($($type:ty),*) => {$(
        impl FromValue for $type {
            fn from_value(value: &Value) -> DbResult<Self> {
                match value {
                    Value::Int(number) => <$type>::try_from(*number)
                        .map_err(|_| wrong_type(value, stringify!($type))),
                    _ => Err(wrong_type(value, stringify!($type))),
                }
            }
        }
    )*};
}
from_value_int!(i64, i32, u64, u32, u16, u8, usize);

impl FromValue for bool {
    fn from_value(value: &Value) -> DbResult<Self> {
        match value {
            Value::Int(number) => Ok(*number != 0),
            _ => Err(wrong_type(value, "a boolean")),
        }
    }
}

impl FromValue for f64 {
    fn from_value(value: &Value) -> DbResult<Self> {
        match value {
            Value::Real(number) => Ok(*number),
            Value::Int(number) => Ok(*number as f64),
            _ => Err(wrong_type(value, "a number")),
        }
    }
}

impl FromValue for String {
    fn from_value(value: &Value) -> DbResult<Self> {
        match value {
            Value::Text(text) => Ok(text.clone()),
            _ => Err(wrong_type(value, "text")),
        }
    }
}

impl FromValue for Vec<u8> {
    fn from_value(value: &Value) -> DbResult<Self> {
        match value {
            Value::Blob(bytes) => Ok(bytes.clone()),
            _ => Err(wrong_type(value, "bytes")),
        }
    }
}

impl FromValue for Value {
    fn from_value(value: &Value) -> DbResult<Self> {
        Ok(value.clone())
    }
}

impl<T: FromValue> FromValue for Option<T> {
    fn from_value(value: &Value) -> DbResult<Self> {
        match value {
            Value::Null => Ok(None),
            _ => T::from_value(value).map(Some),
        }
    }
}

/// One row of a result.
pub(super) struct Row<'a> {
    values: &'a [Value],
}

impl Row<'_> {
    /// Column `index` (from 0) as a `T`.
    pub(super) fn get<T: FromValue>(&self, index: usize) -> DbResult<T> {
        let value = self.values.get(index).ok_or_else(|| {
            DbError::new(ErrorKind::Other, format!("no column {index} in the row"))
        })?;
        T::from_value(value)
    }
}

/// `optional()` on a one-row query: no row is `None`, not an error.
pub(super) trait OptionalExtension<T> {
    fn optional(self) -> DbResult<Option<T>>;
}

impl<T> OptionalExtension<T> for DbResult<T> {
    fn optional(self) -> DbResult<Option<T>> {
        match self {
            Ok(value) => Ok(Some(value)),
            Err(error) if error.kind == ErrorKind::NoRows => Ok(None),
            Err(error) => Err(error),
        }
    }
}

/// What the two SQL dialects write differently.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Dialect {
    Sqlite,
    #[cfg_attr(not(feature = "postgres"), allow(dead_code))]
    Postgres,
}

impl Dialect {
    /// The function giving the 1-based position of a substring (0 when absent).
    pub(super) fn position(self) -> &'static str {
        match self {
            Dialect::Sqlite => "instr",
            Dialect::Postgres => "strpos",
        }
    }

    /// A table of the text elements of the JSON array in parameter `param` (`?3`), one column
    /// named `value`.
    pub(super) fn json_texts(self, param: &str) -> String {
        match self {
            Dialect::Sqlite => format!("SELECT value FROM json_each({param})"),
            Dialect::Postgres => {
                format!("SELECT value FROM jsonb_array_elements_text(CAST({param} AS TEXT)::jsonb)")
            }
        }
    }

    /// The condition "`column` is one of the texts of the JSON array in parameter `param`", in
    /// a form each planner turns into lookups in `column`'s index (PostgreSQL's `= ANY(ARRAY)`;
    /// a join with a set-returning function is planned as a scan of the whole table).
    pub(super) fn in_json_texts(self, column: &str, param: &str) -> String {
        match self {
            Dialect::Sqlite => format!("{column} IN (SELECT value FROM json_each({param}))"),
            Dialect::Postgres => format!(
                "{column} = ANY(ARRAY(SELECT jsonb_array_elements_text(CAST({param} AS TEXT)::jsonb)))"
            ),
        }
    }

    /// A table of the objects of the JSON array in parameter `param` (such as `?2`), with a column per
    /// `(name, SQL type)` (`TEXT`, `BIGINT`) read from the member of that name (NULL when absent),
    /// for `FROM {table} AS alias`: a batch of rows in one parameter, so that a statement over a
    /// batch has one text (one prepared statement) whatever the batch's size.
    pub(super) fn json_rows(self, param: &str, columns: &[(&str, &str)]) -> String {
        match self {
            Dialect::Sqlite => {
                let columns: Vec<String> = columns
                    .iter()
                    .map(|(name, kind)| {
                        format!("CAST(json_extract(value, '$.{name}') AS {kind}) AS {name}")
                    })
                    .collect();
                format!("(SELECT {} FROM json_each({param}))", columns.join(", "))
            }
            Dialect::Postgres => {
                let columns: Vec<String> = columns
                    .iter()
                    .map(|(name, kind)| format!("{name} {kind}"))
                    .collect();
                format!(
                    "(SELECT * FROM jsonb_to_recordset(CAST({param} AS TEXT)::jsonb) AS r({}))",
                    columns.join(", ")
                )
            }
        }
    }

    /// What a query ends with to lock the rows it reads until the transaction ends: PostgreSQL's
    /// `FOR UPDATE`, where another server's transaction may decide on the same rows at once
    /// (credits, counters); SQLite's writers take turns and need nothing.
    pub(super) fn for_update(self) -> &'static str {
        match self {
            Dialect::Sqlite => "",
            Dialect::Postgres => " FOR UPDATE",
        }
    }

    /// [`Dialect::for_update`] for a row other tables reference (a project, a user): PostgreSQL's
    /// `FOR NO KEY UPDATE`, which still lets other transactions insert rows that reference it
    /// (their foreign-key checks take `FOR KEY SHARE`), so holding a project serialises only the
    /// decisions that lock it, not every insert of the project.
    pub(super) fn for_no_key_update(self) -> &'static str {
        match self {
            Dialect::Sqlite => "",
            Dialect::Postgres => " FOR NO KEY UPDATE",
        }
    }

    /// What a query picking rows to claim ends with: PostgreSQL locks the rows it returns and
    /// passes over rows another server's transaction holds (`FOR UPDATE SKIP LOCKED`), so claiming
    /// servers do not queue behind each other; SQLite has one writer at a time and needs nothing.
    pub(super) fn skip_locked(self) -> &'static str {
        match self {
            Dialect::Sqlite => "",
            Dialect::Postgres => " FOR UPDATE SKIP LOCKED",
        }
    }
}

/// A connection (inside a transaction, or reading) of either backend.
#[derive(Clone, Copy)]
pub(super) struct Conn<'c> {
    inner: Inner<'c>,
}

#[derive(Clone, Copy)]
enum Inner<'c> {
    Sqlite(&'c rusqlite::Connection),
    #[cfg(feature = "postgres")]
    Postgres(&'c std::cell::RefCell<super::postgres::PgConn>),
}

impl<'c> Conn<'c> {
    pub(super) fn sqlite(connection: &'c rusqlite::Connection) -> Conn<'c> {
        Conn {
            inner: Inner::Sqlite(connection),
        }
    }

    #[cfg(feature = "postgres")]
    pub(super) fn postgres(
        connection: &'c std::cell::RefCell<super::postgres::PgConn>,
    ) -> Conn<'c> {
        Conn {
            inner: Inner::Postgres(connection),
        }
    }

    /// Which SQL this connection speaks.
    pub(super) fn dialect(&self) -> Dialect {
        match &self.inner {
            Inner::Sqlite(_) => Dialect::Sqlite,
            #[cfg(feature = "postgres")]
            Inner::Postgres(_) => Dialect::Postgres,
        }
    }

    /// Runs one statement; returns the number of rows it changed.
    pub(super) fn execute(&self, sql: &str, params: impl Params) -> DbResult<usize> {
        let values = params.to_values();
        match &self.inner {
            Inner::Sqlite(connection) => {
                let mut statement = connection.prepare_cached(sql)?;
                Ok(statement.execute(rusqlite::params_from_iter(values.iter()))?)
            }
            #[cfg(feature = "postgres")]
            Inner::Postgres(connection) => connection.borrow_mut().execute(sql, &values),
        }
    }

    /// Runs statements without parameters, separated by `;` (schema, tests).
    #[cfg_attr(not(feature = "postgres"), allow(dead_code))]
    pub(super) fn execute_batch(&self, sql: &str) -> DbResult<()> {
        match &self.inner {
            Inner::Sqlite(connection) => Ok(connection.execute_batch(sql)?),
            #[cfg(feature = "postgres")]
            Inner::Postgres(connection) => connection.borrow_mut().execute_batch(sql),
        }
    }

    /// Every row of a query, as values.
    fn rows(&self, sql: &str, params: impl Params) -> DbResult<Vec<Vec<Value>>> {
        let values = params.to_values();
        match &self.inner {
            Inner::Sqlite(connection) => {
                let mut statement = connection.prepare_cached(sql)?;
                let columns = statement.column_count();
                let mut rows = statement.query(rusqlite::params_from_iter(values.iter()))?;
                let mut out = Vec::new();
                while let Some(row) = rows.next()? {
                    let mut record = Vec::with_capacity(columns);
                    for index in 0..columns {
                        record.push(from_sqlite(row.get_ref(index)?));
                    }
                    out.push(record);
                }
                Ok(out)
            }
            #[cfg(feature = "postgres")]
            Inner::Postgres(connection) => connection.borrow_mut().query(sql, &values),
        }
    }

    /// The first row of a query, read by `read`; [`ErrorKind::NoRows`] when there is none.
    pub(super) fn query_row<T>(
        &self,
        sql: &str,
        params: impl Params,
        read: impl FnOnce(&Row<'_>) -> DbResult<T>,
    ) -> DbResult<T> {
        let rows = self.rows(sql, params)?;
        let first = rows.first().ok_or_else(DbError::no_rows)?;
        read(&Row { values: first })
    }

    /// Calls `visit` with each row of a query in turn, as they are read, never all held at once
    /// (the stats walk every attempt of a window).
    pub(super) fn for_each_row(
        &self,
        sql: &str,
        params: impl Params,
        mut visit: impl FnMut(&Row<'_>) -> DbResult<()>,
    ) -> DbResult<()> {
        match &self.inner {
            Inner::Sqlite(connection) => {
                let values = params.to_values();
                let mut statement = connection.prepare_cached(sql)?;
                let columns = statement.column_count();
                let mut rows = statement.query(rusqlite::params_from_iter(values.iter()))?;
                let mut record = Vec::with_capacity(columns);
                while let Some(row) = rows.next()? {
                    record.clear();
                    for index in 0..columns {
                        record.push(from_sqlite(row.get_ref(index)?));
                    }
                    visit(&Row { values: &record })?;
                }
                Ok(())
            }
            #[cfg(feature = "postgres")]
            Inner::Postgres(connection) => {
                connection
                    .borrow_mut()
                    .for_each(sql, &params.to_values(), &mut |values| {
                        visit(&Row { values })
                    })
            }
        }
    }

    /// A statement to run (kept by the backend's statement cache).
    pub(super) fn prepare<'s>(&'s self, sql: &str) -> DbResult<Statement<'s, 'c>> {
        Ok(Statement {
            conn: self,
            sql: sql.to_owned(),
        })
    }

    /// The same as [`Conn::prepare`]: both backends cache every statement.
    pub(super) fn prepare_cached<'s>(&'s self, sql: &str) -> DbResult<Statement<'s, 'c>> {
        self.prepare(sql)
    }
}

/// A statement of a [`Conn`], for queries of many rows.
pub(super) struct Statement<'s, 'c> {
    conn: &'s Conn<'c>,
    sql: String,
}

impl Statement<'_, '_> {
    /// Every row, each read by `read`.
    pub(super) fn query_map<T>(
        &mut self,
        params: impl Params,
        mut read: impl FnMut(&Row<'_>) -> DbResult<T>,
    ) -> DbResult<std::vec::IntoIter<DbResult<T>>> {
        let rows = self.conn.rows(&self.sql, params)?;
        Ok(rows
            .iter()
            .map(|values| read(&Row { values }))
            .collect::<Vec<_>>()
            .into_iter())
    }

    /// Runs the statement; the number of rows it changed.
    pub(super) fn execute(&mut self, params: impl Params) -> DbResult<usize> {
        self.conn.execute(&self.sql, params)
    }
}

fn from_sqlite(value: rusqlite::types::ValueRef<'_>) -> Value {
    use rusqlite::types::ValueRef;
    match value {
        ValueRef::Null => Value::Null,
        ValueRef::Integer(number) => Value::Int(number),
        ValueRef::Real(number) => Value::Real(number),
        ValueRef::Text(text) => Value::Text(String::from_utf8_lossy(text).into_owned()),
        ValueRef::Blob(bytes) => Value::Blob(bytes.to_vec()),
    }
}

impl rusqlite::ToSql for Value {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        use rusqlite::types::{ToSqlOutput, ValueRef};
        Ok(ToSqlOutput::Borrowed(match self {
            Value::Null => ValueRef::Null,
            Value::Int(number) => ValueRef::Integer(*number),
            Value::Real(number) => ValueRef::Real(*number),
            Value::Text(text) => ValueRef::Text(text.as_bytes()),
            Value::Blob(bytes) => ValueRef::Blob(bytes),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_cross_sqlite_unchanged() {
        let connection = rusqlite::Connection::open_in_memory().unwrap();
        let conn = Conn::sqlite(&connection);
        conn.execute_batch("CREATE TABLE t (i INTEGER, r REAL, s TEXT, b BLOB, n INTEGER)")
            .unwrap();
        let blob = vec![0_u8, 255, 7];
        let changed = conn
            .execute(
                "INSERT INTO t VALUES (?1, ?2, ?3, ?4, ?5)",
                params![-5_i64, 1.5_f64, "été", blob, None::<i64>],
            )
            .unwrap();
        assert_eq!(changed, 1);
        let row: (i64, f64, String, Vec<u8>, Option<i64>, bool) = conn
            .query_row("SELECT i, r, s, b, n, i < 0 FROM t", params![], |row| {
                Ok((
                    row.get(0)?,
                    row.get(1)?,
                    row.get(2)?,
                    row.get(3)?,
                    row.get(4)?,
                    row.get(5)?,
                ))
            })
            .unwrap();
        assert_eq!(row, (-5, 1.5, "été".to_owned(), blob, None, true));
        let none = conn
            .query_row("SELECT i FROM t WHERE i > 0", params![], |row| {
                row.get::<i64>(0)
            })
            .optional()
            .unwrap();
        assert_eq!(none, None);
        // A value that does not fit the Rust type is an error, not a wrapped number.
        let error = conn
            .query_row("SELECT i FROM t", params![], |row| row.get::<u32>(0))
            .unwrap_err();
        assert_eq!(error.kind, ErrorKind::Other);
    }
}
