// A live list: the objects of a collection (optionally narrowed by a field or label
// selector), listed once and then kept current by a watch from the list's resourceVersion, so
// nothing is missed or seen twice. Changes that arrive together are shown together (one
// render per 100 ms at most).
import { useEffect, useState } from 'react';
import { get, query, watch } from '../api/client';
import type { List } from '../api/types';

interface Named { metadata?: { name?: string; namespace?: string; resourceVersion?: string } }

const keyOf = (o: Named) => `${o.metadata?.namespace ?? ''}/${o.metadata?.name ?? ''}`;

// `params`: selectors for both the list and the watch (fieldSelector, labelSelector); `limit`
// caps the first list only. null until the list has come back; [] after a refusal, which
// goes to setError (as do the watch's).
export function useLiveList<T extends Named>(path: string, params: Record<string, string>,
  setError: (e: unknown) => void, limit = 500): T[] | null {
  const [items, setItems] = useState<T[] | null>(null);
  const paramsKey = JSON.stringify(params);
  useEffect(() => {
    const ac = new AbortController();
    const seen = new Map<string, T>();
    const selectors = JSON.parse(paramsKey) as Record<string, string>;
    let timer: number | undefined;
    const flush = () => { timer = undefined; setItems([...seen.values()]); };
    setItems(null);
    get<List<T>>(path + query({ ...selectors, limit }), ac.signal).then((l) => {
      for (const o of l.items) seen.set(keyOf(o), o);
      flush();
      return watch<T>(path, selectors, (e) => {
        if (e.type === 'DELETED') seen.delete(keyOf(e.object)); else seen.set(keyOf(e.object), e.object);
        if (timer === undefined) timer = window.setTimeout(flush, 100);
      }, ac.signal, setError, l.metadata?.resourceVersion);
    }).catch((e) => { if (!ac.signal.aborted) { setError(e); setItems([]); } });
    return () => { ac.abort(); if (timer) window.clearTimeout(timer); };
  }, [path, paramsKey, limit, setError]);
  return items;
}
