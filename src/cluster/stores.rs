//! Object stores for executors: the local file system, and an S3 lake's
//! bucket built on first use from the same `AWS_*` settings the client uses
//! (`storage::store_for`), so executors read the lake from the client's URL.

use std::sync::Arc;

use datafusion::error::{DataFusionError, Result};
use datafusion::execution::object_store::{DefaultObjectStoreRegistry, ObjectStoreRegistry};
use object_store::ObjectStore;
use url::Url;

#[derive(Debug, Default)]
pub struct LakeStores {
    known: DefaultObjectStoreRegistry,
}

impl ObjectStoreRegistry for LakeStores {
    fn register_store(
        &self,
        url: &Url,
        store: Arc<dyn ObjectStore>,
    ) -> Option<Arc<dyn ObjectStore>> {
        self.known.register_store(url, store)
    }

    fn get_store(&self, url: &Url) -> Result<Arc<dyn ObjectStore>> {
        if let Ok(store) = self.known.get_store(url) {
            return Ok(store);
        }
        if !matches!(url.scheme(), "s3" | "s3a") {
            return Err(DataFusionError::Configuration(format!(
                "no object store for {url}: executors read file:// and s3:// lakes"
            )));
        }
        let (store, _) =
            crate::storage::store_for(url).map_err(|e| DataFusionError::External(Box::new(e)))?;
        self.known.register_store(url, store.clone());
        Ok(store)
    }
}
