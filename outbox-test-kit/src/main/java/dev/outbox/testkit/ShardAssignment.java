package dev.outbox.testkit;

import dev.outbox.OutboxShards;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;

/**
 * Who owns each shard of a shard leaders' group, as Kafka's group coordinator assigns the partitions of a leader
 * topic: the state and the balancing that {@link InMemoryShardedLeaderGroup} and the simulation's group share. A
 * shard has at most one owner; an orderly move revokes it from its owner, and only once that owner's drain returned
 * ({@link #released}) is it granted to the next one. A member that joins is given the shards nobody owns, then takes
 * shards from the busiest members until it has its share ({@code shards / eligible members}). Members are numbered
 * by the group; what reaches them (an assignment, a revocation) the group delivers, told through {@link Group}.
 *
 * <p>Not thread-safe: the group that holds it guards it.
 */
public final class ShardAssignment {
    /** The group around the assignment: who may be given shards, and the delivery of its decisions. */
    public interface Group {
        /**
         * How many members there are (numbered from 0), eligible or not.
         *
         * @return the number of members ever added; members are never renumbered
         */
        int members();

        /**
         * Whether {@code member} may be given shards (it joined, did not leave, and reaches the coordinator).
         *
         * @param member a member number, from 0 to {@link #members()} - 1
         * @return {@code true} if it may be given shards now
         */
        boolean eligible(int member);

        /**
         * {@code shard} was granted to {@code member}: tell it. Called with the assignment already changed; must
         * not call back into the assignment.
         *
         * @param shard  the shard granted
         * @param member its new owner
         */
        void granted(int shard, int member);

        /**
         * {@code shard} is revoked from {@code member} in an orderly way: tell it, and call {@link #released} once its
         * {@code revoked} callback returned.
         *
         * @param shard  the shard being revoked; its owner stays {@code member} until {@link #released}
         * @param member its owner, which must drain it
         */
        void revoking(int shard, int member);

        /**
         * Which of {@code candidates}, shards of {@code from}, moves to the newcomer {@code to}: an index into it.
         *
         * @param from       the busiest member, which gives up a shard
         * @param to         the member that joined
         * @param candidates the shards of {@code from} that may move, in ascending order; never empty
         * @return an index into {@code candidates}, from 0 to {@code candidates.size() - 1} (a simulation lets its
         *         chooser decide; a fixed choice keeps a test predictable)
         */
        int pick(int from, int to, List<Integer> candidates);
    }

    private static final int NONE = -1;
    private final Group group;
    private final int[] owner;
    private final boolean[] revoking;
    private final int[] target;

    /**
     * An assignment in which no shard has an owner yet.
     *
     * @param shards the number of shards, from 1 to {@link OutboxShards#MAX_SHARDS}
     * @param group  the members and the delivery of decisions; called back from this object's methods
     * @throws IllegalArgumentException naming the count if it is not between 1 and {@link OutboxShards#MAX_SHARDS}
     */
    public ShardAssignment(int shards, Group group) {
        OutboxShards.checkCount(shards);
        this.group = group;
        this.owner = new int[shards];
        this.revoking = new boolean[shards];
        this.target = new int[shards];
        Arrays.fill(owner, NONE);
        Arrays.fill(target, NONE);
    }

    /**
     * The number of shards.
     *
     * @return the count given to the constructor
     */
    public int shards() {
        return owner.length;
    }

    /**
     * The owner of {@code shard} (until its revocation's drain returned), or -1.
     *
     * @param shard a shard, from 0 to {@link #shards()} - 1
     * @return the owner's member number, or -1 if the shard has none
     * @throws ArrayIndexOutOfBoundsException if {@code shard} is out of range
     */
    public int owner(int shard) {
        return owner[shard];
    }

    /**
     * The shards {@code member} owns.
     *
     * @param member a member number
     * @return a new sorted set of its shards, those being revoked included; empty if none
     */
    public Set<Integer> owned(int member) {
        Set<Integer> s = new TreeSet<>();
        for (int i = 0; i < owner.length; i++) {
            if (owner[i] == member) {
                s.add(i);
            }
        }
        return s;
    }

    /**
     * The shards that have an owner and no revocation under way.
     *
     * @return a new list of those shards, ascending
     */
    public List<Integer> movable() {
        List<Integer> l = new ArrayList<>();
        for (int i = 0; i < owner.length; i++) {
            if (owner[i] != NONE && !revoking[i]) {
                l.add(i);
            }
        }
        return l;
    }

    /**
     * Whether a revocation of one of {@code member}'s shards is under way.
     *
     * @param member a member number
     * @return {@code true} if one of its shards was revoked and not yet {@linkplain #released released}
     */
    public boolean revokingFrom(int member) {
        for (int i = 0; i < owner.length; i++) {
            if (owner[i] == member && revoking[i]) {
                return true;
            }
        }
        return false;
    }

    /**
     * An orderly move of {@code shard} to {@code to}: revoked from its owner, granted to {@code to} once released
     * (or, if {@code to} is no longer eligible by then, to the least loaded member).
     *
     * @param shard the shard to move, from 0 to {@link #shards()} - 1
     * @param to    the member number of its next owner
     * @return false if the shard has no owner or is already being revoked
     */
    public boolean move(int shard, int to) {
        if (owner[shard] == NONE || revoking[shard]) {
            return false;
        }
        target[shard] = to;
        revoke(shard);
        return true;
    }

    /**
     * {@code old}'s revocation of {@code shard} returned: the shard goes to its next owner, unless it was taken from
     * {@code old} meanwhile (its session expired, or it left).
     *
     * @param shard the shard whose revocation returned
     * @param old   the member that drained it; a release by a member that no longer owns the shard is ignored
     */
    public void released(int shard, int old) {
        if (owner[shard] != old || !revoking[shard]) {
            return;
        }
        owner[shard] = NONE;
        revoking[shard] = false;
        int to = target[shard];
        target[shard] = NONE;
        if (to != NONE && group.eligible(to)) {
            grant(shard, to);
        } else {
            grantUnowned();
        }
    }

    /**
     * Takes every shard from {@code member} at once (its session expired, or it left), revocations under way
     * included, and forgets the shards on their way to it; does not grant them (see {@link #grantUnowned}).
     *
     * @param member the member number of the member that is out
     * @return the shards it had, as a new sorted set
     */
    public Set<Integer> takeAll(int member) {
        Set<Integer> had = new TreeSet<>();
        for (int i = 0; i < owner.length; i++) {
            if (owner[i] == member) {
                owner[i] = NONE;
                revoking[i] = false;
                had.add(i);
            }
            if (target[i] == member) {
                target[i] = NONE;
            }
        }
        return had;
    }

    /** Grants every shard without an owner to the least loaded eligible member (the lowest numbered on a tie). */
    public void grantUnowned() {
        for (int i = 0; i < owner.length; i++) {
            if (owner[i] == NONE) {
                int to = leastLoaded();
                if (to == NONE) {
                    return;
                }
                grant(i, to);
            }
        }
    }

    /**
     * {@code member} (re)joined: it is given the shards nobody owns, then takes shards from the busiest members until
     * it has its share, each by an orderly move ({@link Group#pick} says which of the busiest member's shards).
     *
     * @param member the member number of the member that joined; it must already be {@linkplain Group#eligible
     *               eligible}
     */
    public void joined(int member) {
        grantUnowned();
        int eligible = 0;
        for (int m = 0; m < group.members(); m++) {
            eligible += group.eligible(m) ? 1 : 0;
        }
        int share = eligible == 0 ? 0 : owner.length / eligible;
        while (load(member) < share) {
            int busiest = NONE;
            for (int m = 0; m < group.members(); m++) {
                if (m != member && group.eligible(m) && (busiest == NONE || load(m) > load(busiest))) {
                    busiest = m;
                }
            }
            if (busiest == NONE || load(busiest) <= share) {
                return;
            }
            List<Integer> theirs = new ArrayList<>();
            for (int i = 0; i < owner.length; i++) {
                if (owner[i] == busiest && !revoking[i]) {
                    theirs.add(i);
                }
            }
            if (theirs.isEmpty()) {
                // All the busiest will have is still on its way to it (this member joined while moves were under
                // way): one of those shards comes here instead, as the coordinator's next rebalance would decide.
                for (int i = 0; i < owner.length; i++) {
                    if (target[i] == busiest) {
                        theirs.add(i);
                    }
                }
                int s = theirs.get(group.pick(busiest, member, theirs));
                target[s] = member;
                continue;
            }
            int s = theirs.get(group.pick(busiest, member, theirs));
            target[s] = member;
            revoke(s);
        }
    }

    /**
     * The shards {@code member} owns (not being revoked) or is about to be given.
     *
     * @param member a member number
     * @return the number of such shards
     */
    public int load(int member) {
        int n = 0;
        for (int i = 0; i < owner.length; i++) {
            if (owner[i] == member && !revoking[i] || target[i] == member) {
                n++;
            }
        }
        return n;
    }

    private void revoke(int shard) {
        revoking[shard] = true;
        group.revoking(shard, owner[shard]);
    }

    private void grant(int shard, int to) {
        owner[shard] = to;
        group.granted(shard, to);
    }

    private int leastLoaded() {
        int best = NONE;
        for (int m = 0; m < group.members(); m++) {
            if (group.eligible(m) && (best == NONE || load(m) < load(best))) {
                best = m;
            }
        }
        return best;
    }

    /** Each shard's owner ("-" for none), "&gt;" and the next owner while it is revoked. */
    @Override
    public String toString() {
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < owner.length; i++) {
            sb.append(i).append('=').append(owner[i] == NONE ? "-" : String.valueOf(owner[i]))
                    .append(revoking[i] ? ">" + (target[i] == NONE ? "?" : String.valueOf(target[i])) : "")
                    .append(' ');
        }
        return sb.toString().trim();
    }
}
