/**
 * The custom search attributes the order workflows set (workflows/api.ts), registered in the namespace through the
 * operator API when missing. Idempotent; used by `fulfilment provision` and the local stack.
 */
import type { Connection } from '@temporalio/client';
import { OrderIdAttribute, OrderStatusAttribute, TenantIdAttribute } from '../../../workflows/api.js';

type AttributeType = 'Keyword' | 'Text' | 'Int' | 'Double' | 'Bool' | 'Datetime' | 'KeywordList';

/** The SDK's SearchAttributeType → the server's (and the CLI's) name of the type. */
const TYPE_NAME: Record<string, AttributeType> = {
  TEXT: 'Text',
  KEYWORD: 'Keyword',
  INT: 'Int',
  DOUBLE: 'Double',
  BOOL: 'Bool',
  DATETIME: 'Datetime',
  KEYWORD_LIST: 'KeywordList',
};

/** Name → type of every search attribute the workflows use (from their keys in workflows/api.ts). */
export const SEARCH_ATTRIBUTES: Record<string, AttributeType> = Object.fromEntries(
  [TenantIdAttribute, OrderIdAttribute, OrderStatusAttribute].map((k) => [k.name, TYPE_NAME[k.type] ?? 'Keyword']),
);

/** temporal.api.enums.v1.IndexedValueType */
const INDEXED_VALUE_TYPE: Record<AttributeType, number> = {
  Text: 1,
  Keyword: 2,
  Int: 3,
  Double: 4,
  Bool: 5,
  Datetime: 6,
  KeywordList: 7,
};

export interface SearchAttributesResult {
  registered: string[];
  unchanged: string[];
}

/** Registers the search attributes `namespace` lacks. */
export async function ensureSearchAttributes(
  connection: Connection,
  namespace: string,
): Promise<SearchAttributesResult> {
  const res = await connection.operatorService.listSearchAttributes({ namespace });
  const have = res.customAttributes ?? {};
  const missing = Object.keys(SEARCH_ATTRIBUTES).filter((k) => !(k in have));
  if (missing.length > 0) {
    const searchAttributes: Record<string, number> = {};
    for (const k of missing) searchAttributes[k] = INDEXED_VALUE_TYPE[SEARCH_ATTRIBUTES[k]!];
    await connection.operatorService.addSearchAttributes({ namespace, searchAttributes });
  }
  return { registered: missing, unchanged: Object.keys(SEARCH_ATTRIBUTES).filter((k) => k in have) };
}
