package dev.outbox.store.mysql;

import org.jdbi.v3.core.statement.SqlStatement;

import java.util.ArrayList;
import java.util.List;

/**
 * Ids as {@code IN} lists of bound parameters, for the statements only this store runs (the shared writes bind theirs
 * through {@code IdBinding}): at most {@link MySqlStore#MAX_IDS_PER_STATEMENT} parameters per statement. Stateless.
 */
final class InLists {
    private InLists() {
    }

    /** {@code sql} with {@code ${ids}} as {@code count} placeholders and {@code ${pairs}} as that many {@code pair}s. */
    static String in(String sql, int count, String pair) {
        StringBuilder ids = new StringBuilder(count * 3);
        StringBuilder pairs = new StringBuilder();
        for (int i = 0; i < count; i++) {
            ids.append(i == 0 ? "?" : ", ?");
            pairs.append(pair);
        }
        return sql.replace("${pairs}", pairs).replace("${ids}", ids);
    }

    /** {@code sql} with {@code ${ids}} as {@code count} placeholders. */
    static String in(String sql, int count) {
        return in(sql, count, "");
    }

    /** {@code ids} in consecutive pieces of at most {@code size}; none for no ids. */
    static List<List<Long>> chunks(List<Long> ids, int size) {
        if (ids.isEmpty()) {
            return List.of();
        }
        if (ids.size() <= size) {
            return List.of(ids);
        }
        List<List<Long>> chunks = new ArrayList<>();
        for (int from = 0; from < ids.size(); from += size) {
            chunks.add(ids.subList(from, Math.min(ids.size(), from + size)));
        }
        return chunks;
    }

    /** Binds {@code ids} to the positional parameters from {@code from} on. */
    static <S extends SqlStatement<S>> S bind(S statement, int from, List<Long> ids) {
        int position = from;
        for (Long id : ids) {
            statement.bind(position++, id.longValue());
        }
        return statement;
    }
}
